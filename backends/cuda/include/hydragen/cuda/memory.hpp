#pragma once
// The CUDA device's global memory as a hydragen::DeviceMemory, so harnesses stage problems for
// CUDA backends the way they do for host ones. It acts on the current device (cudaSetDevice).
//
// allocate: cudaMalloc; running out throws hydragen::OutOfMemory with the bytes requested and the
//   device's free/total bytes, and leaves the context usable. Other failures throw CudaError.
// copies and fill: complete when they return (synchronous), like host memory.
// unavailable_reason: "" when a device is usable, else "no CUDA device: ..."; never throws.
// sharing_rates: the CUDA planner's device rates for the current GPU (device-rates.csv's row for its
//   name, else a calibration's, else measured at first use), else the rate-free ones.
#include "hydragen/memory.hpp"

namespace hydragen::cuda {

const DeviceMemory& device_memory();

}  // namespace hydragen::cuda
