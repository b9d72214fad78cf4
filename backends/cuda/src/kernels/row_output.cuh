#pragma once
// How a segment-attention block hands over its rows: the kernels' store step. Each row is one
// partial result of a query (O normalized, LSE natural log) over the tokens its item saw. A query
// with a single partial row has its O and LSE written at once (no merge kernel runs when every
// query has one); otherwise the row goes to the fp32 workspace for the merge kernel, or, where the
// plan says so (MergeParams::fold_wide_rows), a leaf's row folds its query's other partial rows,
// which the wide launch before it wrote, and writes O and LSE. (The last block to finish a query
// folding it, found by a counter, or a split block's last part, measured slower
// (kernel-notes: no-counted-merge); this fold's order is fixed in advance, its row ids are the
// plan's, and it waits for a kernel, not for atomics.)
#include <cmath>
#include <type_traits>

#include "dependent_launch.cuh"
#include "hydragen/cuda/element.cuh"
#include "hydragen/merge.hpp"
#include "params.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

// Columns of a row held by lane `sub` of the lanes sharing it (sub 0 writes the row's LSE), value v:
// tensor-core accumulators (4 consecutive lanes) hold column pairs 8j + 2 sub + {0, 1}; the merge
// kernel's lanes hold adjacent columns; the others stride; the token product's O^T (8 lanes 4 apart)
// holds columns 16j + 8h + sub.
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
struct TokenProductColumns {  // NarrowProduct::tokens: values 2j + h at 16j + 8h + sub (sub = g)
  static constexpr bool kPairs = false;
  int sub;
  __device__ int operator()(int v) const { return 16 * (v / 2) + 8 * (v % 2) + sub; }
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

// The same, loading: N values of a row at `src` (its first column), as store_values lays them.
template <int N, typename Columns>
__device__ __forceinline__ void load_values(const float* src, float (&o)[N], Columns columns) {
  if constexpr (Columns::kPairs) {
#pragma unroll
    for (int v = 0; v < N; v += 2) {
      const float2 pair = *reinterpret_cast<const float2*>(src + columns(v));
      o[v] = pair.x, o[v + 1] = pair.y;
    }
  } else {
#pragma unroll
    for (int v = 0; v < N; ++v) o[v] = src[columns(v)];
  }
}

// Where one row of a block goes. Loaded when the block starts, so the store step does not begin
// with a chain of dependent loads.
struct RowOutput {
  int row = -1;  // -1: none (a lane past the item's rows)
  int query = 0;
  bool direct = false;  // the query's only partial row: written to O and LSE, not to the workspace
  bool fold = false;    // folds the query's other rows, then written to O and LSE (fold_wide_rows)
  int first = 0;        // the query's rows in the merge lists: merge.rows[first, first + count)
  int count = 0;
};

__device__ __forceinline__ RowOutput row_output(const SegmentAttentionParams& p, int row) {
  RowOutput out;
  if (row >= 0) {
    out.row = row;
    out.query = p.row_query[row];
    // The loads unconditionally, the plan's flag last: a branch on the flag first kept the compiler
    // from issuing both rows' loads together (a 5% slower mma.sync item, kernel-notes: row-output-loads).
    out.first = p.merge.offsets[out.query];
    out.count = p.merge.offsets[out.query + 1] - out.first;
    out.direct = out.count == 1 && p.merge.single_rows_direct;
    out.fold = out.count > 1 && p.merge.fold_wide_rows;
  }
  return out;
}

// A leaf row doing its query's merge: the query's other rows (at most ROUNDS, from the wide launch
// this one follows) folded into the lane's N values `o` and the row's `lse` by the core merge, in the
// merge lists' order, one at a time (two at once spilled the leaf kernels' registers). The row ids
// are the plan's: read before the wait for the wide launch's end.
template <int D, int ROUNDS = kFoldRounds, int N, typename Columns>
__device__ __forceinline__ void fold_wide_rows(const MergeParams& m, const RowOutput& out, float (&o)[N], float& lse,
                                               Columns columns) {
  int rows[ROUNDS + 1];  // the query's rows, this one among them; out.row past its count
#pragma unroll
  for (int i = 0; i <= ROUNDS; ++i) rows[i] = i < out.count ? m.rows[out.first + i] : out.row;
  wait_for_primary();
#pragma unroll
  for (int i = 0; i <= ROUNDS; ++i) {
    if (rows[i] == out.row) continue;
    float part[N];
    load_values(m.partial_o + static_cast<long long>(rows[i]) * D, part, columns);
    merge_into(o, lse, part, m.partial_lse[rows[i]], N);
  }
}

// Hands over a row of which this lane holds the N values o[v] at columns(v) (the lane of columns.sub
// 0 writes the LSE). FOLD: the most rows a leaf that does its query's merge folds, where the kernel may
// run such leaves (the narrow mma.sync kernels); 0 compiles the fold out of the others, whose
// registers it would cost.
template <typename T, int D, int FOLD = 0, int N, typename Columns>
__device__ __forceinline__ void finish_row(const SegmentAttentionParams& p, const RowOutput& out, float (&o)[N], float lse,
                                           Columns columns) {
  const MergeParams& m = p.merge;
  const bool leader = columns.sub == 0;
  if (out.row < 0) return;
  if constexpr (FOLD > 0) {
    if (out.fold) fold_wide_rows<D, FOLD>(m, out, o, lse, columns);
  }
  if (out.direct || (FOLD > 0 && out.fold)) {
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
template <typename T, int D, int FOLD = 0>
__device__ __forceinline__ void finish_row_pair(const SegmentAttentionParams& p, const float (&acc)[D / 2], int r,
                                                const RowOutput& out, float inv, float lse, int t) {
  float o[D / 4];
  fragment_row<D>(acc, r, inv, o);
  finish_row<T, D, FOLD>(p, out, o, lse, FragmentColumns{t});
}

// finish_row for row r (2t + r of the item) of the token product's O^T accumulator (NarrowProduct::tokens):
// m-tile j holds columns 16j + g ([4j + r]) and 16j + g + 8 ([4j + 2 + r]).
template <typename T, int D>
__device__ __forceinline__ void finish_token_row(const SegmentAttentionParams& p, const float (&acc)[D / 4], int r,
                                                 const RowOutput& out, float inv, float lse, int g) {
  float o[D / 8];
#pragma unroll
  for (int j = 0; j < D / 16; ++j) {
    o[2 * j] = acc[4 * j + r] * inv;
    o[2 * j + 1] = acc[4 * j + 2 + r] * inv;
  }
  finish_row<T, D, kFoldRounds>(p, out, o, lse, TokenProductColumns{g});
}

}  // namespace hydragen::cuda
