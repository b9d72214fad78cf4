#pragma once
// Where a backend's tensors live. Backends expose one DeviceMemory so that harnesses (tests,
// hydragen-diff, the sweep) can stage problems for any backend without knowing its device.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "hydragen/sharing_rates.hpp"

namespace hydragen {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::string_view name() const = 0;  // "host" or "cuda"
  // Empty when this memory can be used here; otherwise why not (e.g. "no CUDA device: ...").
  // Tests skip, and tools refuse, with this message.
  virtual std::string unavailable_reason() const { return {}; }
  // Throws OutOfMemory stating the bytes requested. Zero bytes returns nullptr.
  virtual void* allocate(std::size_t bytes) const = 0;
  virtual void release(void* ptr) const noexcept = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) const = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) const = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) const = 0;  // within this memory
  virtual void fill(void* dst, unsigned char byte, std::size_t bytes) const = 0;
  virtual void synchronize() const = 0;  // waits for all work queued on the device
  // Bytes an allocation could still get now: the host's MemAvailable (within an address-space
  // limit), a CUDA device's free memory. What the memory check (memory_need.hpp) compares with.
  virtual std::size_t available_bytes() const = 0;
  // The rate detection's cost model (min_shared_tokens) weighs partials at on this memory's device:
  // the rate-free default unless the device was measured (the CUDA planner's rates for the current
  // GPU).
  virtual SharingRates sharing_rates() const { return {}; }
};

// The host's memory (malloc/memcpy); what the reference and CPU backends use.
const DeviceMemory& host_memory();

// Owns one allocation in a DeviceMemory; frees it on every path.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const DeviceMemory& memory, std::size_t bytes) : memory_(&memory), data_(memory.allocate(bytes)), bytes_(bytes) {}
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (memory_ != nullptr) memory_->release(data_);
  }

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(memory_, other.memory_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
  }
  const DeviceMemory* memory_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace hydragen
