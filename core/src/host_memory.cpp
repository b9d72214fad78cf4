#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "hydragen/errors.hpp"
#include "hydragen/memory.hpp"

namespace hydragen {

namespace {

// A field of /proc/meminfo in bytes ("MemAvailable"); 0 when absent.
std::size_t meminfo_bytes(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string name, unit;
  std::size_t kib = 0;
  while (meminfo >> name >> kib) {
    std::getline(meminfo, unit);
    if (name == field + ":") return kib * 1024;
  }
  return 0;
}

// What malloc can still get: the kernel's estimate of memory available without swapping and,
// under an address-space limit (ulimit -v), the room left below it.
std::size_t host_available_bytes() {
  std::size_t available = meminfo_bytes("MemAvailable");
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::ifstream status("/proc/self/statm");
    std::size_t pages = 0;
    status >> pages;
    const std::size_t mapped = pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t room = limit.rlim_cur > mapped ? limit.rlim_cur - mapped : 0;
    available = std::min(available, room);
  }
  return available;
}

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
  std::size_t available_bytes() const override { return host_available_bytes(); }
};
}  // namespace

const DeviceMemory& host_memory() {
  static const HostMemory memory;
  return memory;
}

}  // namespace hydragen
