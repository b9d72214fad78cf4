#pragma once
// The end of a row's softmax, from the max m of its scaled scores (log2 units) and the sum l of
// 2^(score - m): 1 / l (0 for a row that saw nothing) and the row's LSE (natural log, -inf for
// nothing). The segment-attention kernels and the chunk softmax all hand their rows over with these.
#include <cmath>

namespace hydragen::cuda {

__device__ __forceinline__ float row_inv(float l) { return l > 0.f ? 1.f / l : 0.f; }

__device__ __forceinline__ float row_lse(float m, float l) {
  constexpr float kLn2 = 0.6931471805599453f;
  return l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
}

}  // namespace hydragen::cuda
