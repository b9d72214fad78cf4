#pragma once
// A typed device allocation for kernel workspaces: allocated in the constructor, freed in the
// destructor, move-only. Elements are raw bytes until written (no constructors run on the device).
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "hydragen/cuda/memory.hpp"
#include "hydragen/memory.hpp"

namespace hydragen::cuda {

template <typename T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray holds bytes copied with cudaMemcpy");

 public:
  DeviceArray() = default;
  // Throws OutOfMemory (see device_memory()) or std::length_error when size * sizeof(T) overflows.
  explicit DeviceArray(std::size_t size) : buffer_(device_memory(), bytes_for(size)) {}

  T* data() const { return static_cast<T*>(buffer_.data()); }  // [size()] on the device
  std::size_t size() const { return buffer_.bytes() / sizeof(T); }
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  static std::size_t bytes_for(std::size_t size) {
    if (size > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw std::length_error("DeviceArray: " + std::to_string(size) + " elements of " +
                              std::to_string(sizeof(T)) + " bytes overflow size_t");
    return size * sizeof(T);
  }

  Buffer buffer_;  // moves leave it empty, so a moved-from array has size() 0
};

// A DeviceArray holding a copy of `values` (plans upload their tables with it).
template <typename T>
DeviceArray<T> upload(const std::vector<T>& values) {
  DeviceArray<T> array(values.size());
  device_memory().copy_from_host(array.data(), values.data(), array.bytes());
  return array;
}

}  // namespace hydragen::cuda
