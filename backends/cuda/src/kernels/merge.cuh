#pragma once
// Combines each query's partial rows into O and LSE with the core merge (hydragen/merge.hpp).
// One warp per query; lane owns columns lane + 32e.
#include <cmath>

#include "element.cuh"
#include "hydragen/merge.hpp"
#include "params.hpp"

namespace hydragen::cuda {

inline constexpr int kMergeWarps = 4;  // queries per block

template <typename T, int D>
__global__ void __launch_bounds__(kMergeWarps * 32) merge_partials(const MergeParams p) {
  const int query = blockIdx.x * kMergeWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (query >= p.num_queries) return;
  float o[D / 32] = {};
  float lse = -INFINITY;  // empty: the merge identity
  for (int i = p.offsets[query]; i < p.offsets[query + 1]; ++i) {
    const int row = p.rows[i];
    const float* const part = p.partial_o + static_cast<long long>(row) * D;
    const MergeWeights<float> w = merge_weights(lse, p.partial_lse[row]);
#pragma unroll
    for (int e = 0; e < D / 32; ++e) o[e] = w.a * o[e] + w.b * part[lane + 32 * e];
    lse = w.lse;
  }
  T* const out = static_cast<T*>(p.o) + static_cast<long long>(query) * D;
#pragma unroll
  for (int e = 0; e < D / 32; ++e) out[lane + 32 * e] = from_float<T>(o[e]);
  if (lane == 0) p.lse[query] = lse;
}

}  // namespace hydragen::cuda
