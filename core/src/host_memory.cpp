#include <cstdlib>
#include <cstring>

#include "hydragen/errors.hpp"
#include "hydragen/memory.hpp"

namespace hydragen {

namespace {
class HostMemory final : public DeviceMemory {
 public:
  std::string_view name() const override { return "host"; }
  void* allocate(std::size_t bytes) const override {
    if (bytes == 0) return nullptr;
    // 64-byte alignment: whole cache lines, and enough for any SIMD load.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw OutOfMemory("host memory", bytes, "aligned_alloc returned null");
    return p;
  }
  void release(void* ptr) const noexcept override { std::free(ptr); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) const override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) const override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void fill(void* dst, unsigned char byte, std::size_t bytes) const override {
    if (bytes != 0) std::memset(dst, byte, bytes);
  }
  void synchronize() const override {}
};
}  // namespace

const DeviceMemory& host_memory() {
  static const HostMemory memory;
  return memory;
}

}  // namespace hydragen
