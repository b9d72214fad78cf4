#pragma once
// Combines each query's partial rows into O and LSE with the core merge (hydragen/merge.hpp); a
// query of one partial row was written by its block (row_output.cuh) unless the plan says otherwise
// (MergeParams::single_rows_direct), a query of none gets the identity (O = 0, LSE = -inf).
//
// One warp per query, or kMergeWarps for a query of more than kMergeSplitAbove partials (each folds
// a share, then the first folds the others' states); lane owns D / 32 adjacent columns (one vector
// load per partial). The partials' row ids and LSEs come kMergeRound at a time, one per lane, and the
// LSEs give each partial its weight at once (merge_scale); their outputs come kBatch at a time, all
// loads issued before the fold, so no load waits on another (kernel-notes: merge-loads).
#include <cmath>

#include "dependent_launch.cuh"
#include "hydragen/cuda/block_reduce.cuh"
#include "hydragen/cuda/element.cuh"
#include "hydragen/merge.hpp"
#include "params.hpp"
#include "row_output.cuh"
#include "tile_config.hpp"

namespace hydragen::cuda {

static_assert(kMergeRound == 32, "a round of partial row ids is one per lane of a warp");

// N adjacent floats from `src` (16- or 8-byte aligned) in one load.
template <int N>
__device__ __forceinline__ void load_floats(const float* src, float (&dst)[N]) {
  static_assert(N == 2 || N == 4, "vector loads of 2 or 4 floats");
  if constexpr (N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
  } else {
    const float2 v = *reinterpret_cast<const float2*>(src);
    dst[0] = v.x, dst[1] = v.y;
  }
}

// WARPS warps per query (1, or kMergeWarps for queries of many partials).
template <typename T, int D, int WARPS>
__global__ void __launch_bounds__(kMergeWarps * 32, 16) merge_partials(const MergeParams p) {
  static_assert(kMergeWarps % WARPS == 0, "a block holds whole queries");
  constexpr int V = D / 32;  // columns per lane: lane * V + v
  constexpr int kBatch = 2;  // partial rows loaded together (more registers cost occupancy)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int query = blockIdx.x * (kMergeWarps / WARPS) + warp / WARPS, share = warp % WARPS;
  if (query >= p.num_queries) return;  // uniform across a query's warps, as is the next return
  const int first = p.offsets[query], last = p.offsets[query + 1];
  if (last - first == 1 && p.single_rows_direct) return;  // its block wrote it
  const int begin = first + (last - first) * share / WARPS, end = first + (last - first) * (share + 1) / WARPS;
  // The LSEs of a round of partials, one a lane, give every partial its weight before any output
  // arrives (the core merge's many-partial form, merge_scale): the fold is a multiply-add per value,
  // not a chain of merges. Across rounds the weights are taken against the running max, the sum and
  // the outputs so far rescaled to it, as the online softmax does with its tiles.
  float acc[V] = {};  // the outputs, each times its weight e^(lse - max)
  float max = -INFINITY, sum = 0.0f;  // no partial: the merge identity
  // The row ids are the plan's; the partial rows are the attention kernel's, ready after the wait.
  int mine = begin + lane < end ? p.rows[begin + lane] : 0;
  wait_for_primary();
  for (int base = begin; base < end; base += kMergeRound) {
    const int count = min(kMergeRound, end - base);
    if (base != begin) mine = lane < count ? p.rows[base + lane] : 0;
    const float mine_lse = lane < count ? p.partial_lse[mine] : -INFINITY;
    const float new_max = fmaxf(max, warp_reduce(mine_lse, [](float a, float b) { return fmaxf(a, b); }));
    const float carry = merge_scale(max, new_max), mine_scale = merge_scale(mine_lse, new_max);
    sum = sum * carry + warp_reduce(mine_scale, [](float a, float b) { return a + b; });
    max = new_max;
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] *= carry;
#pragma unroll 1  // unrolled, it spilled 60 bytes at the 32-register cap
    for (int k0 = 0; k0 < count; k0 += kBatch) {
      float part[kBatch][V];  // loaded together, then folded
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int row = __shfl_sync(0xffffffffu, mine, (k0 + j) % 32);
        if (k0 + j < count) load_floats(p.partial_o + static_cast<long long>(row) * D + lane * V, part[j]);
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const float scale = __shfl_sync(0xffffffffu, mine_scale, (k0 + j) % 32);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = k0 + j < count ? fmaf(scale, part[j][v], acc[v]) : acc[v];
      }
    }
  }
  const float inv = merged_inv(sum);
  float o[V];
#pragma unroll
  for (int v = 0; v < V; ++v) o[v] = acc[v] * inv;
  float lse = merged_lse(max, sum);
  if constexpr (WARPS > 1) {
    __shared__ float states[kMergeWarps][D + 1];  // each warp's O, then its LSE
#pragma unroll
    for (int v = 0; v < V; ++v) states[warp][lane * V + v] = o[v];
    if (lane == 0) states[warp][D] = lse;
    __syncthreads();
    if (share != 0) return;
    for (int w = 1; w < WARPS; ++w) merge_into(o, lse, &states[warp + w][lane * V], states[warp + w][D], V);
  }
  store_values(static_cast<T*>(p.o) + static_cast<long long>(query) * D, o, AdjacentColumns<V>{lane});
  if (lane == 0) p.lse[query] = lse;
}

}  // namespace hydragen::cuda
