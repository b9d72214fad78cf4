#pragma once
// How a segment-attention block hands over its rows: the kernels' store step. Each row is one
// partial result of a query (O normalized, LSE natural log) over the tokens its item saw. A query
// with a single partial row has its O and LSE written at once (no merge kernel runs when every
// query has one); otherwise the row goes to the fp32 workspace for the merge kernel. (The block
// folding a query's other partials itself, to save the merge launch, measured slower: perf-notes
// v3, v9, v10.)
#include <type_traits>

#include "element.cuh"
#include "params.hpp"

namespace hydragen::cuda {

// Columns of a row held by lane `sub` of the GROUP consecutive lanes sharing it, value v:
// tensor-core accumulators (GROUP 4) hold column pairs 8j + 2 sub + {0, 1}; the merge kernel's
// lanes hold adjacent columns; the others stride.
struct FragmentColumns {
  static constexpr bool kPairs = true;  // values 2j and 2j + 1 are adjacent columns
  int sub;
  __device__ int operator()(int v) const { return 8 * (v / 2) + 2 * sub + v % 2; }
};
template <int N>
struct AdjacentColumns {  // N adjacent columns per lane (N even)
  static constexpr bool kPairs = true;
  int sub;
  __device__ int operator()(int v) const { return N * sub + v; }
};
template <int GROUP>
struct StridedColumns {
  static constexpr bool kPairs = false;
  int sub;
  __device__ int operator()(int v) const { return sub + GROUP * v; }
};

// Writes a lane's N values of a row at `dst` (the row's first column): pairs in one store where
// the layout has them.
template <typename T, int N, typename Columns>
__device__ __forceinline__ void store_values(T* dst, const float (&o)[N], Columns columns) {
  if constexpr (Columns::kPairs && std::is_same_v<T, float>) {
#pragma unroll
    for (int v = 0; v < N; v += 2) *reinterpret_cast<float2*>(dst + columns(v)) = make_float2(o[v], o[v + 1]);
  } else if constexpr (Columns::kPairs) {
#pragma unroll
    for (int v = 0; v < N; v += 2) *reinterpret_cast<unsigned*>(dst + columns(v)) = pack2<T>(o[v], o[v + 1]);
  } else {
#pragma unroll
    for (int v = 0; v < N; ++v) dst[columns(v)] = from_float<T>(o[v]);
  }
}

// Where one row of a block goes. Loaded when the block starts, so the store step does not begin
// with a chain of dependent loads.
struct RowOutput {
  int row = -1;  // -1: none (a lane past the item's rows)
  int query = 0;
  bool direct = false;  // the query's only partial row: written to O and LSE, not to the workspace
};

__device__ __forceinline__ RowOutput row_output(const SegmentAttentionParams& p, int row) {
  RowOutput out;
  if (row >= 0) {
    out.row = row;
    out.query = p.row_query[row];
    // The loads unconditionally, the plan's flag last: a branch on the flag first kept the compiler
    // from issuing both rows' loads together (a 5% slower mma.sync item, perf-notes v11).
    const int count = p.merge.offsets[out.query + 1] - p.merge.offsets[out.query];
    out.direct = count == 1 && p.merge.single_rows_direct;
  }
  return out;
}

// Hands over a row of which this lane holds the N values o[v] at columns(v), GROUP consecutive
// lanes per row (the first writes the LSE).
template <typename T, int D, int GROUP, int N, typename Columns>
__device__ __forceinline__ void finish_row(const SegmentAttentionParams& p, const RowOutput& out, const float (&o)[N],
                                           float lse, Columns columns) {
  const MergeParams& m = p.merge;
  const bool leader = threadIdx.x % GROUP == 0;
  if (out.row < 0) return;
  if (out.direct) {
    store_values(static_cast<T*>(m.o) + static_cast<long long>(out.query) * D, o, columns);
    if (leader) m.lse[out.query] = lse;
  } else {
    store_values(m.partial_o + static_cast<long long>(out.row) * D, o, columns);
    if (leader) m.partial_lse[out.row] = lse;
  }
}

// Row r (0 or 1) of a lane's tensor-core accumulator (online_softmax.cuh's layout), normalized by
// inv: the lane's D / 4 values, at FragmentColumns{t}.
template <int D>
__device__ __forceinline__ void fragment_row(const float (&acc)[D / 2], int r, float inv, float (&o)[D / 4]) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    o[2 * j] = acc[4 * j + 2 * r] * inv;
    o[2 * j + 1] = acc[4 * j + 2 * r + 1] * inv;
  }
}

// finish_row for row r of a tensor-core accumulator.
template <typename T, int D>
__device__ __forceinline__ void finish_row_pair(const SegmentAttentionParams& p, const float (&acc)[D / 2], int r,
                                                const RowOutput& out, float inv, float lse, int t) {
  float o[D / 4];
  fragment_row<D>(acc, r, inv, o);
  finish_row<T, D, 4>(p, out, o, lse, FragmentColumns{t});
}

}  // namespace hydragen::cuda
