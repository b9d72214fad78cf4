#include "hydragen/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "hydragen/cuda/check.hpp"

namespace hydragen::cuda {

namespace {
// CUDA 13 dropped cudaDeviceProp::memoryClockRate; the attribute remains. 0 when not reported.
int attribute_or_zero(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}
}  // namespace

std::string DeviceInfo::describe() const {
  char line[512];
  std::snprintf(line, sizeof(line), "%s: sm_%d%d, %d SMs, %.1f GiB, L2 %.1f MiB, %zu KiB shared/block", name.c_str(),
                major, minor, multiprocessors, static_cast<double>(global_memory_bytes) / (1 << 30),
                static_cast<double>(l2_bytes) / (1 << 20), shared_memory_per_block_optin / 1024);
  return line;
}

DeviceInfo query_device(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.device = device;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, device);
  info.memory_bus_width_bits = prop.memoryBusWidth;
  return info;
}

DeviceInfo query_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return query_device(device);
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace hydragen::cuda
