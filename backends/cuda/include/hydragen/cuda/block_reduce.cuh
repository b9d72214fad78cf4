#pragma once
// A reduction of one value per thread over a block of THREADS threads (a multiple of 32), for
// kernels that give a whole block to one row.

namespace hydragen::cuda {

// Every thread gets op over all threads' values; `scratch` holds THREADS / 32 floats in shared memory.
template <int THREADS, typename Op>
__device__ __forceinline__ float block_reduce(float value, Op op, float* scratch) {
  static_assert(THREADS % 32 == 0, "whole warps");
  for (int x = 16; x > 0; x >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, x));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = scratch[0];
  for (int w = 1; w < THREADS / 32; ++w) value = op(value, scratch[w]);
  __syncthreads();  // scratch is reused by the next reduction
  return value;
}

}  // namespace hydragen::cuda
