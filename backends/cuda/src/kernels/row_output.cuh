#pragma once
// How a segment-attention block hands over its rows. Each row is one partial result of a query
// (O normalized, LSE natural log) over the tokens its item saw. A query with a single partial row
// has its O and LSE written at once (no merge kernel runs when every query has one); otherwise the
// row goes to the fp32 workspace for the merge kernel, or, when the item is a part of a merge group
// (a split row block whose parts hold all its queries' rows), the last part to finish folds them:
// it still holds its own rows in registers and loads the other parts' rows of the same columns,
// one round of loads per part, so neither a merge launch nor a serial tail follows the kernel.
//
// Tried and measured slower (H100): the block writing a query's last partial merging them itself
// (a counter per query): a fence and three rounds of dependent loads per leaf block, (1024, 4096,
// 64) 0.073 -> 0.079 ms; the last part re-reading every row of its block from memory, a warp per
// row one after another: up to 3.3x slower at S = 0 ((256, 4096, 0) 0.0224 -> 0.0694 ms).
#include <type_traits>

#include "async_copy.cuh"
#include "element.cuh"
#include "hydragen/merge.hpp"
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

// Reads a lane's N values of a row at `src` from L2 (another SM wrote them during this kernel).
template <int N, typename Columns>
__device__ __forceinline__ void load_values(const float* src, float (&o)[N], Columns columns) {
  if constexpr (Columns::kPairs) {
#pragma unroll
    for (int v = 0; v < N; v += 2) {
      const float2 pair = __ldcg(reinterpret_cast<const float2*>(src + columns(v)));
      o[v] = pair.x, o[v + 1] = pair.y;
    }
  } else {
#pragma unroll
    for (int v = 0; v < N; ++v) o[v] = __ldcg(src + columns(v));
  }
}

// Where one row of a block goes: its query and how many partial rows that query has. Loaded when
// the block starts, so the epilogue does not begin with a chain of dependent loads.
struct RowOutput {
  int row = -1;  // -1: none (a lane past the item's rows)
  int query = 0;
  int count = 0;  // partial rows of the query
};

__device__ __forceinline__ RowOutput row_output(const SegmentAttentionParams& p, int row) {
  RowOutput out;
  if (row >= 0) {
    out.row = row;
    out.query = p.row_query[row];
    out.count = p.merge.offsets[out.query + 1] - p.merge.offsets[out.query];
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
  if (out.count == 1) {
    store_values(static_cast<T*>(m.o) + static_cast<long long>(out.query) * D, o, columns);
    if (leader) m.lse[out.query] = lse;
  } else if (out.count > 1) {
    store_values(m.partial_o + static_cast<long long>(out.row) * D, o, columns);
    if (leader) m.partial_lse[out.row] = lse;
  }
}

// Whether this block is the last part of its item's merge group to finish, once the THREADS
// threads (whole warps from threadIdx.x 0, named barrier 1 free) have written their rows. As in a
// grid-wide barrier, one thread fences for the block: the barrier orders every thread's rows before
// its fence and arrival, and the other parts' rows after its second fence before anyone reads them.
// `parts` matters in thread 0 only.
template <int THREADS>
__device__ __forceinline__ bool last_part(const SegmentAttentionParams& p, const WorkItem& item, int parts) {
  if (item.merge_group < 0) return false;  // uniform across the block
  __shared__ bool last;
  named_sync(1, THREADS);
  if (threadIdx.x == 0) {
    __threadfence();
    // atomicInc wraps to 0 at the last arrival: the counter is ready for the next run.
    last = atomicInc(p.parts_done + item.merge_group, parts - 1) == parts - 1;
    __threadfence();
  }
  named_sync(1, THREADS);
  return last;
}

// The last part's fold of its rows: each query's rows of every part, in part order (as the merge
// kernel folds them), its own from registers. Every load is issued before the first fold, so the
// fold costs one round of memory latency: folding the rows one after another, part by part, took
// 4 us at (1024, 16384, 0) and 6 us at (32, 1024, 0) (H100), more than the merge kernel.
template <typename T, int D, int GROUP, int R, int N, typename Columns>
__device__ __forceinline__ void fold_parts(const SegmentAttentionParams& p, const WorkItem& item,
                                           const RowOutput (&out)[R], const float (&mine)[R][N],
                                           const float (&mine_lse)[R], Columns columns) {
  constexpr int OTHERS = kMaxMergedParts - 1;
  const MergeParams& m = p.merge;
  float other[R][OTHERS][N];
  float other_lse[R][OTHERS];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int j = 0; j < OTHERS; ++j) {
      const int k = j < item.part ? j : j + 1;  // the parts other than this one, in order
      other_lse[r][j] = -INFINITY;
      if (out[r].row >= 0 && k < out[r].count) {
        const int row = out[r].row + (k - item.part) * item.num_rows;
        load_values(m.partial_o + static_cast<long long>(row) * D, other[r][j], columns);
        other_lse[r][j] = __ldcg(m.partial_lse + row);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (out[r].row < 0) continue;
    float o[N] = {};
    float lse = -INFINITY;
#pragma unroll
    for (int k = 0; k < kMaxMergedParts; ++k) {
      if (k >= out[r].count) break;
      // Part k: this block's own rows, or others[k] before this part, others[k - 1] after it
      // (indices fixed once unrolled: no runtime index into registers).
      const bool own = k == item.part, before = k < item.part;
      const int j0 = min(k, OTHERS - 1), j1 = max(k - 1, 0);
      const float part_lse = own ? mine_lse[r] : before ? other_lse[r][j0] : other_lse[r][j1];
      const MergeWeights<float> w = merge_weights(lse, part_lse);
#pragma unroll
      for (int v = 0; v < N; ++v) o[v] = w.a * o[v] + w.b * (own ? mine[r][v] : before ? other[r][j0][v] : other[r][j1][v]);
      lse = w.lse;
    }
    store_values(static_cast<T*>(m.o) + static_cast<long long>(out[r].query) * D, o, columns);
    if (threadIdx.x % GROUP == 0) m.lse[out[r].query] = lse;
  }
}

// The end of an item: hands over this lane's R rows (N values each at columns(v), GROUP lanes per
// row), then, in the last part of a merge group, folds their queries. All THREADS threads call it.
template <typename T, int D, int GROUP, int THREADS, int R, int N, typename Columns>
__device__ __forceinline__ void hand_over(const SegmentAttentionParams& p, const WorkItem& item,
                                          const RowOutput (&out)[R], const float (&o)[R][N], const float (&lse)[R],
                                          Columns columns) {
#pragma unroll
  for (int r = 0; r < R; ++r) finish_row<T, D, GROUP>(p, out[r], o[r], lse[r], columns);
  // A merge group's queries have a row in each part, so thread 0's first row (the item's row 0)
  // tells the part count.
  if (last_part<THREADS>(p, item, out[0].count)) fold_parts<T, D, GROUP>(p, item, out, o, lse, columns);
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

// hand_over for the two rows of a lane's tensor-core accumulator.
template <typename T, int D, int THREADS>
__device__ __forceinline__ void hand_over_fragments(const SegmentAttentionParams& p, const WorkItem& item,
                                                    const float (&acc)[D / 2], const RowOutput (&out)[2],
                                                    const float (&inv)[2], const float (&lse)[2], int t) {
  float o[2][D / 4];
  fragment_row<D>(acc, 0, inv[0], o[0]);
  fragment_row<D>(acc, 1, inv[1], o[1]);
  hand_over<T, D, 4, THREADS>(p, item, out, o, lse, FragmentColumns{t});
}

}  // namespace hydragen::cuda
