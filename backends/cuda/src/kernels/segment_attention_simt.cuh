#pragma once
// Segment attention on the CUDA cores, for fp32 storage (the tensor cores would round it to tf32).
// Same work items and outputs as the tensor-core kernel; narrow items only (16 rows, 128 threads:
// 8 lanes per row), a block over its run of items (worker_items.cuh). Each 32-token tile: scores,
// online softmax in exp2, O += P V, all in fp32.
#include <cmath>

#include "dependent_launch.cuh"
#include "hydragen/cuda/element.cuh"
#include "item_segments.cuh"
#include "leaf_length.cuh"
#include "params.hpp"
#include "row_end.cuh"
#include "row_output.cuh"
#include "tile_config.hpp"
#include "worker_items.cuh"

namespace hydragen::cuda {

template <typename T, int D>
__global__ void __launch_bounds__(kSimtThreads) segment_attention_simt(const SegmentAttentionParams p) {
  allow_dependents();  // the merge may start once every block has (dependent_launch.cuh)
  constexpr int KT = kSimtTokens, ROWS = kNarrowRows, LANES = kSimtThreads / ROWS;  // lanes per row
  __shared__ float sq[ROWS][D];
  __shared__ float sk[KT][D + 1];  // +1: the 8 lanes of a row read 8 different tokens without conflict
  __shared__ float sv[KT][D];
  __shared__ float sp[ROWS][KT];
  __shared__ ItemSegments<T> segs;

  const int row = threadIdx.x / LANES, sub = threadIdx.x % LANES;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* const q = static_cast<const T*>(p.q);
  const ItemRange range = worker_items(p, blockIdx.x, gridDim.x);
  for (int index = range.first; index <= range.last; ++index) {
    __syncthreads();  // the last item's tiles and token list are consumed
    const WorkItem item = p.items[index];
    segs.load(p, item);
    for (int r = warp; r < ROWS; r += 4) {
      const T* const src = r < item.num_rows ? q + static_cast<long long>(p.row_query[item.first_row + r]) * D : nullptr;
      for (int d = lane; d < D; d += 32) sq[r][d] = src != nullptr ? to_float(src[d]) : 0.f;
    }
    const int limit = row < item.num_rows ? visible_limit(p, item.first_row + row) : 0;
    const RowOutput out = row_output(p, row < item.num_rows ? item.first_row + row : -1);

    float m = -INFINITY, l = 0.f;  // running max (log2 units) and sum of this row
    float o[D / LANES] = {};       // columns sub + 8i
    for (int p0 = item.token_begin; p0 < item.token_end; p0 += KT) {
      __syncthreads();  // the previous tile is consumed
      for (int r = warp; r < KT; r += 4) {
        const int pos = p0 + r;
        const bool in_item = pos < item.token_end;
        const int i = in_item ? segs.find(pos) : 0;
        for (int d = lane; d < D; d += 32) {
          const long long off = in_item ? segs.offset(i, pos, p.kv_heads, item.kv_head, D, d) : 0;
          sk[r][d] = in_item ? to_float(segs.k[i][off]) : 0.f;
          sv[r][d] = in_item ? to_float(segs.v[i][off]) : 0.f;
        }
      }
      __syncthreads();
      float s[KT / LANES];
      float tile_max = -INFINITY;
  #pragma unroll
      for (int j = 0; j < KT / LANES; ++j) {
        const int token = sub + LANES * j, pos = p0 + token;
        float dot = 0.f;
  #pragma unroll 16
        for (int d = 0; d < D; ++d) dot += sq[row][d] * sk[token][d];
        s[j] = pos < item.token_end && pos < limit ? dot * p.scale_log2 : -INFINITY;
        tile_max = fmaxf(tile_max, s[j]);
      }
  #pragma unroll
      for (int x = 1; x < LANES; x <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, x));
      const float new_m = fmaxf(m, tile_max);
      const float base = new_m == -INFINITY ? 0.f : new_m;  // nothing seen yet: exp2(-inf) = 0, no NaN
      const float alpha = exp2f(m - base);
      float sum = 0.f;
  #pragma unroll
      for (int j = 0; j < KT / LANES; ++j) {
        s[j] = exp2f(s[j] - base);
        sum += s[j];
        sp[row][sub + LANES * j] = s[j];
      }
  #pragma unroll
      for (int x = 1; x < LANES; x <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, x);
      l = l * alpha + sum;
      m = new_m;
      __syncwarp();  // sp[row] is written and read by the same 8 lanes
  #pragma unroll
      for (int i = 0; i < D / LANES; ++i) o[i] *= alpha;
      for (int token = 0; token < KT; ++token) {
        const float pv = sp[row][token];
  #pragma unroll
        for (int i = 0; i < D / LANES; ++i) o[i] += pv * sv[token][sub + LANES * i];
      }
    }
    const float inv = row_inv(l);
  #pragma unroll
    for (int i = 0; i < D / LANES; ++i) o[i] *= inv;
    finish_row<T, D>(p, out, o, row_lse(m, l), StridedColumns<LANES>{sub});
  }
}

}  // namespace hydragen::cuda
