#pragma once
// Segment attention on the tensor cores (fp16/bf16; FlashAttention-2 structure, mma.sync m16n8k16).
//
// A block is WARPS warps; warp w owns rows 16w..16w+15 of the item, its Q fragments held in
// registers for the whole item. K/V tiles of 64 tokens stream through shared memory in two stages
// (cp.async); each tile: S = Q K^T (fp32), causal/length mask, online softmax in exp2, O += P V.
// The item's rows end as fp32 partials (O normalized, LSE natural log) for the merge kernel.
#include <cmath>

#include "element.cuh"
#include "item_segments.cuh"
#include "mma.cuh"
#include "params.hpp"

namespace hydragen::cuda {

template <int D>
struct MmaTile {
  static constexpr int kTokens = 64;     // tokens per K/V tile
  static constexpr int kStride = D + 8;  // shared row stride in elements: +16 bytes keeps ldmatrix conflict-free
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
  // Two stages of a K tile and a V tile.
  template <typename T>
  static constexpr int smem_bytes() { return 2 * 2 * kTokens * kStride * static_cast<int>(sizeof(T)); }
};

template <typename T, int D, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) segment_attention_mma(const SegmentAttentionParams p) {
  using Tile = MmaTile<D>;
  constexpr int KT = Tile::kTokens, STRIDE = Tile::kStride, THREADS = WARPS * 32;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const sk = reinterpret_cast<T*>(smem_raw);  // [2][KT][STRIDE]
  T* const sv = sk + 2 * KT * STRIDE;            // [2][KT][STRIDE]
  __shared__ ItemSegments<T> segs;

  const WorkItem item = p.items[blockIdx.x];
  segs.load(p, item);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;

  // Rows r0 and r1 = r0 + 8 of this lane (fragment rows g and g + 8).
  const int r0 = 16 * warp + g, r1 = r0 + 8;
  const bool has0 = r0 < item.num_rows, has1 = r1 < item.num_rows;
  const T* const q = static_cast<const T*>(p.q);
  const T* const q0 = has0 ? q + static_cast<long long>(p.row_query[item.first_row + r0]) * D : nullptr;
  const T* const q1 = has1 ? q + static_cast<long long>(p.row_query[item.first_row + r1]) * D : nullptr;
  const int limit0 = has0 ? p.row_limit[item.first_row + r0] : 0;
  const int limit1 = has1 ? p.row_limit[item.first_row + r1] : 0;
  unsigned qa[D / 16][4];  // A fragments of Q, one per 16 columns
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = 16 * ks + 2 * t;
    qa[ks][0] = has0 ? *reinterpret_cast<const unsigned*>(q0 + c) : 0u;
    qa[ks][1] = has1 ? *reinterpret_cast<const unsigned*>(q1 + c) : 0u;
    qa[ks][2] = has0 ? *reinterpret_cast<const unsigned*>(q0 + c + 8) : 0u;
    qa[ks][3] = has1 ? *reinterpret_cast<const unsigned*>(q1 + c + 8) : 0u;
  }

  // Issues the copies of tile `tile` into stage `stage`; positions past token_end become zeros.
  // Thread c copies 16-byte chunks c, c + THREADS, ...: always the same column, rows 8 apart.
  auto load_tile = [&](int tile, int stage) {
    const int p0 = item.token_begin + tile * KT;
    const int first = segs.find(p0);
    T* const k_dst = sk + stage * KT * STRIDE;
    T* const v_dst = sv + stage * KT * STRIDE;
    if (p0 + KT <= item.token_end && p0 + KT <= segs.start[first + 1]) {
      // The common case: the whole tile lies in one segment, rows a fixed stride apart.
      const long long stride = static_cast<long long>(p.kv_heads) * D;
      const long long base = segs.offset(first, p0, p.kv_heads, item.kv_head, D, 0);
      for (int c = threadIdx.x; c < KT * Tile::kChunks; c += THREADS) {
        const int row = c / Tile::kChunks, column = c % Tile::kChunks * 8;
        const long long off = base + row * stride + column;
        cp_async_16(k_dst + row * STRIDE + column, segs.k[first] + off, 16);
        cp_async_16(v_dst + row * STRIDE + column, segs.v[first] + off, 16);
      }
    } else {
      // A tile across a segment boundary or past the item's end: locate every row.
      for (int c = threadIdx.x; c < KT * Tile::kChunks; c += THREADS) {
        const int row = c / Tile::kChunks, column = c % Tile::kChunks * 8;
        const int pos = p0 + row;
        const T* k_src = q;  // any valid address: nothing is read when the size is 0
        const T* v_src = q;
        int bytes = 0;
        if (pos < item.token_end) {
          const int i = segs.find(pos);
          const long long off = segs.offset(i, pos, p.kv_heads, item.kv_head, D, column);
          k_src = segs.k[i] + off;
          v_src = segs.v[i] + off;
          bytes = 16;
        }
        cp_async_16(k_dst + row * STRIDE + column, k_src, bytes);
        cp_async_16(v_dst + row * STRIDE + column, v_src, bytes);
      }
    }
    cp_async_commit();
  };

  float m0 = -INFINITY, m1 = -INFINITY;  // running max of the scaled scores, log2 units
  float l0 = 0.f, l1 = 0.f;              // this lane's share of the running sums
  float acc[D / 8][4] = {};              // O fragments: 8 columns each
  const int tiles = (item.token_end - item.token_begin + KT - 1) / KT;
  load_tile(0, 0);
  for (int it = 0; it < tiles; ++it) {
    if (it + 1 < tiles) {
      load_tile(it + 1, (it + 1) & 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* const ks_tile = sk + (it & 1) * KT * STRIDE;
    const T* const vs_tile = sv + (it & 1) * KT * STRIDE;

    float s[KT / 8][4] = {};  // S = Q K^T: 8 tokens per fragment
#pragma unroll
    for (int ks = 0; ks < D / 16; ks += 2) {
#pragma unroll
      for (int nt = 0; nt < KT / 8; ++nt) {
        unsigned b[4];
        ldmatrix_x4(b, ks_tile + (8 * nt + lane % 8) * STRIDE + 16 * ks + 8 * (lane / 8));
        mma_16816<T>(s[nt], qa[ks], b[0], b[1]);
        mma_16816<T>(s[nt], qa[ks + 1], b[2], b[3]);
      }
    }

    // Mask (causal leaf limit, end of the item) and scale into log2 units; row maxima.
    const int p0 = item.token_begin + it * KT;
    float max0 = -INFINITY, max1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < KT / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int pos = p0 + 8 * nt + 2 * t + e;
        const bool in_item = pos < item.token_end;
        s[nt][e] = in_item && pos < limit0 ? s[nt][e] * p.scale_log2 : -INFINITY;
        s[nt][2 + e] = in_item && pos < limit1 ? s[nt][2 + e] * p.scale_log2 : -INFINITY;
        max0 = fmaxf(max0, s[nt][e]);
        max1 = fmaxf(max1, s[nt][2 + e]);
      }
    }
#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {  // the 4 lanes of a row group
      max0 = fmaxf(max0, __shfl_xor_sync(0xffffffffu, max0, x));
      max1 = fmaxf(max1, __shfl_xor_sync(0xffffffffu, max1, x));
    }
    const float new0 = fmaxf(m0, max0), new1 = fmaxf(m1, max1);
    // A row that has seen nothing yet keeps base 0, so exp2(-inf - 0) = 0 and no NaN appears.
    const float base0 = new0 == -INFINITY ? 0.f : new0, base1 = new1 == -INFINITY ? 0.f : new1;
    const float alpha0 = exp2f(m0 - base0), alpha1 = exp2f(m1 - base1);
    m0 = new0;
    m1 = new1;
    l0 *= alpha0;
    l1 *= alpha1;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      acc[nt][0] *= alpha0;
      acc[nt][1] *= alpha0;
      acc[nt][2] *= alpha1;
      acc[nt][3] *= alpha1;
    }
#pragma unroll
    for (int nt = 0; nt < KT / 8; ++nt) {
      s[nt][0] = exp2f(s[nt][0] - base0);
      s[nt][1] = exp2f(s[nt][1] - base0);
      s[nt][2] = exp2f(s[nt][2] - base1);
      s[nt][3] = exp2f(s[nt][3] - base1);
      l0 += s[nt][0] + s[nt][1];
      l1 += s[nt][2] + s[nt][3];
    }

    // O += P V: P's accumulator layout is already the A layout of the next product.
#pragma unroll
    for (int kc = 0; kc < KT / 16; ++kc) {
      const unsigned pa[4] = {pack2<T>(s[2 * kc][0], s[2 * kc][1]), pack2<T>(s[2 * kc][2], s[2 * kc][3]),
                              pack2<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                              pack2<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        unsigned b[4];
        ldmatrix_x4_trans(b, vs_tile + (16 * kc + lane % 8 + (lane / 8 & 1) * 8) * STRIDE + 16 * np + (lane / 16) * 8);
        mma_16816<T>(acc[2 * np], pa, b[0], b[1]);
        mma_16816<T>(acc[2 * np + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();  // the next iteration's copies overwrite this stage
  }

#pragma unroll
  for (int x = 1; x <= 2; x <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, x);
    l1 += __shfl_xor_sync(0xffffffffu, l1, x);
  }
  constexpr float kLn2 = 0.6931471805599453f;
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
  if (has0) {
    float* const out = p.partial_o + static_cast<long long>(item.first_row + r0) * D;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      *reinterpret_cast<float2*>(out + 8 * nt + 2 * t) = make_float2(acc[nt][0] * inv0, acc[nt][1] * inv0);
    }
    if (t == 0) p.partial_lse[item.first_row + r0] = l0 > 0.f ? (m0 + log2f(l0)) * kLn2 : -INFINITY;
  }
  if (has1) {
    float* const out = p.partial_o + static_cast<long long>(item.first_row + r1) * D;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      *reinterpret_cast<float2*>(out + 8 * nt + 2 * t) = make_float2(acc[nt][2] * inv1, acc[nt][3] * inv1);
    }
    if (t == 0) p.partial_lse[item.first_row + r1] = l1 > 0.f ? (m1 + log2f(l1)) * kLn2 : -INFINITY;
  }
}

}  // namespace hydragen::cuda
