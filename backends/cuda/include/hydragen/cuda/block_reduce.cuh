#pragma once
// A reduction of one value per thread over a warp, or over a block of THREADS threads (a multiple
// of 32), for kernels that give a warp or a whole block to one row.

namespace hydragen::cuda {

// Every lane of the warp gets op over all 32 lanes' values.
template <typename Op>
__device__ __forceinline__ float warp_reduce(float value, Op op) {
  for (int x = 16; x > 0; x >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, x));
  return value;
}

// Every thread gets op over all threads' values; `scratch` holds THREADS / 32 floats in shared memory.
template <int THREADS, typename Op>
__device__ __forceinline__ float block_reduce(float value, Op op, float* scratch) {
  static_assert(THREADS % 32 == 0, "whole warps");
  value = warp_reduce(value, op);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = scratch[0];
  for (int w = 1; w < THREADS / 32; ++w) value = op(value, scratch[w]);
  __syncthreads();  // scratch is reused by the next reduction
  return value;
}

}  // namespace hydragen::cuda
