#pragma once
// Combines each query's partial rows into O and LSE with the core merge (hydragen/merge.hpp); a
// query of one partial row was written by its block (row_output.cuh).
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
  // The partials' row ids and LSEs, 32 at a time, one per lane, so no load waits on another; the
  // fold then takes them from the lanes (a query's 16 split partials, loaded one after the other,
  // cost 32 dependent memory latencies: 18 us at B = 128, ncu).
  const int begin = p.offsets[query], end = p.offsets[query + 1];
  if (end - begin == 1) return;  // its block wrote it (row_output.cuh)
  for (int base = begin; base < end; base += 32) {
    const int mine = base + lane < end ? p.rows[base + lane] : 0;
    const float mine_lse = base + lane < end ? p.partial_lse[mine] : -INFINITY;
    const int count = min(32, end - base);
#pragma unroll 8
    for (int k = 0; k < count; ++k) {
      const int row = __shfl_sync(0xffffffffu, mine, k);
      const float* const part = p.partial_o + static_cast<long long>(row) * D;
      const MergeWeights<float> w = merge_weights(lse, __shfl_sync(0xffffffffu, mine_lse, k));
#pragma unroll
      for (int e = 0; e < D / 32; ++e) o[e] = w.a * o[e] + w.b * part[lane + 32 * e];
      lse = w.lse;
    }
  }
  T* const out = static_cast<T*>(p.o) + static_cast<long long>(query) * D;
#pragma unroll
  for (int e = 0; e < D / 32; ++e) out[lane + 32 * e] = from_float<T>(o[e]);
  if (lane == 0) p.lse[query] = lse;
}

}  // namespace hydragen::cuda
