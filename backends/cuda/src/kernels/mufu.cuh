#pragma once
// One MUFU instruction each: 2^x, 1 / x and log2(x), approximate and flushing subnormals to zero,
// where exp2f, division and log2f add IEEE range fix-ups that the softmax's values do not need: its
// probabilities below 2^-126 count for nothing, and a row's sum is at least 1 (row_end.cuh).

namespace hydragen::cuda {

// exp2_approx(-inf) = 0: a masked score's probability.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace hydragen::cuda
