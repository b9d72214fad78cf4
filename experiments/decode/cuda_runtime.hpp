#pragma once
// The decoder step's arithmetic on the current CUDA device: bf16 in device memory, every operation
// enqueued on one non-blocking stream the runtime owns (cuBLAS GEMMs with fp32 accumulation, small
// kernels computing in fp32 and rounding each output once), so that a step can be captured in a
// CUDA graph. Its graphs must not outlive it.
#include <memory>

#include "decode/runtime.hpp"

namespace hydragen::decode {

// Throws hydragen::cuda::CudaError when there is no usable device.
std::unique_ptr<Runtime> cuda_runtime();

}  // namespace hydragen::decode
