#pragma once
// The one list of what has kernels, and what every kernel family's launch code shares.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "hydragen/cuda/check.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

// Calls f(T{}) for the storage type, or throws.
template <typename F>
void dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::fp32: return f(float{});
    case DType::fp16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    default: break;
  }
  throw std::invalid_argument("CUDA kernels: dtype " + std::string(dtype_name(dtype)) + " has no kernel (fp32, fp16, bf16)");
}

// Calls f(T{}, std::integral_constant<int, D>{}) for the storage type and head dim, or throws.
template <typename F>
void dispatch(DType dtype, int head_dim, F&& f) {
  dispatch_dtype(dtype, [&](auto element) {
    switch (head_dim) {
      case 64: return f(element, std::integral_constant<int, 64>{});
      case 128: return f(element, std::integral_constant<int, 128>{});
      default: break;
    }
    throw std::invalid_argument("CUDA kernels: head_dim " + std::to_string(head_dim) + " has no kernel (64, 128)");
  });
}

// dispatch for kernels of 16-bit storage only: fp32 has its own kernel, so reaching one of these
// with it is a logic error, reported as `refusal`.
template <typename F>
void dispatch_16bit(DType dtype, int head_dim, const char* refusal, F&& f) {
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    if constexpr (std::is_same_v<decltype(element), float>) {
      throw std::logic_error(refusal);
    } else {
      f(element, dim);
    }
  });
}

// Raises a kernel's dynamic shared-memory limit (above 48 KB needs the opt-in), once per kernel and
// device: the attribute is the current device's, and a process may run plans on several (one thread
// per GPU, hydragen-decode --gpus).
template <auto Kernel>
void allow_smem(int bytes) {
  static std::atomic<std::uint64_t> done{0};  // bit d: set on device d (the first 64)
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const std::uint64_t bit = device < 64 ? std::uint64_t{1} << device : 0;
  if ((done.load(std::memory_order_acquire) & bit) != 0) return;
  CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.fetch_or(bit, std::memory_order_release);
}

// kernel<<<grid, block, smem, stream>>>(params); `dependent`: as a programmatic dependent launch,
// which may start while the stream's previous kernel ends (dependent_launch.cuh); `cluster` > 1: in
// thread-block clusters of that many consecutive blocks (grid.x a multiple of it).
template <typename Params>
void launch_kernel(void (*kernel)(Params), dim3 grid, dim3 block, int smem, cudaStream_t stream, bool dependent,
                   const Params& params, int cluster = 1) {
  cudaLaunchAttribute attributes[2]{};
  int count = 0;
  if (dependent) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count++].val.clusterDim = {static_cast<unsigned>(cluster), 1, 1};
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = static_cast<unsigned>(count);
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, params));
}

}  // namespace hydragen::cuda
