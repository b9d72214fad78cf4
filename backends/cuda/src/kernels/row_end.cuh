#pragma once
// The end of a row's softmax, from the max m of its scaled scores (log2 units) and the sum l of
// 2^(score - m): 1 / l (0 for a row that saw nothing) and the row's LSE (natural log, -inf for
// nothing). The segment-attention kernels and the chunk softmax all hand their rows over with these.
//
// A row that saw anything has l >= 1 (its max's term is 1): no subnormals, and the MUFU's
// approximations serve (CUDA's bounds for __fdividef and __log2f: 2 ulp; log2 within 2^-22 on
// [0.5, 2]). The IEEE forms cost an item of the token product about 66 of its 548 instructions
// (kernel-notes: mufu-finish).
#include <cmath>

#include "mufu.cuh"

namespace hydragen::cuda {

__device__ __forceinline__ float row_inv(float l) { return l > 0.f ? rcp_approx(l) : 0.f; }

__device__ __forceinline__ float row_lse(float m, float l) {
  constexpr float kLn2 = 0.6931471805599453f;
  return l > 0.f ? (m + lg2_approx(l)) * kLn2 : -INFINITY;
}

}  // namespace hydragen::cuda
