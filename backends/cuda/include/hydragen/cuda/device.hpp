#pragma once
// What the GPU is: the numbers kernels size themselves by (SMs, shared memory, L2) and the sweep
// records next to its timings.
#include <cstddef>
#include <string>

namespace hydragen::cuda {

struct DeviceInfo {
  int device = 0;
  std::string name;                                // e.g. "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;                        // compute capability
  int multiprocessors = 0;
  std::size_t l2_bytes = 0;
  std::size_t shared_memory_per_block_optin = 0;  // the most a kernel can opt in to (cudaFuncSetAttribute)
  std::size_t global_memory_bytes = 0;
  int memory_clock_khz = 0;                        // 0 when the device does not report it
  int memory_bus_width_bits = 0;

  // One line, e.g. "NVIDIA H100 80GB HBM3: sm_90, 132 SMs, 79.2 GiB, L2 50.0 MiB, 227 KiB shared/block".
  std::string describe() const;
};

// Throws CudaError when `device` does not exist (or there is no device or driver at all).
DeviceInfo query_device(int device);
// The current device (cudaSetDevice's), the one the backends launch on.
DeviceInfo query_device();

// The number of CUDA devices; 0 when there is none or no driver. Never throws.
int device_count();

}  // namespace hydragen::cuda
