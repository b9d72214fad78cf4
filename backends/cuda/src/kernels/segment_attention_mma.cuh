#pragma once
// Segment attention on the tensor cores (fp16/bf16; FlashAttention-2 structure, mma.sync m16n8k16).
//
// A block is ROW_WARPS x TOKEN_WARPS warps. Row warp rw owns rows 16rw..16rw+15 of the item, its Q
// fragments held in registers for the whole item; token warp tw takes its share of every tile. K/V
// tiles of 64 tokens stream through shared memory in two stages (cp.async); each warp, per tile:
// S = Q K^T (fp32), causal/length mask, online softmax in exp2, O += P V. Token warps then merge
// their states through shared memory with the core merge. Each row then goes to row_output.cuh.
//
// Wide items (64 rows, the stacked queries of a shared segment): 4 row warps x 1 token warp.
// Narrow items (<= 16 rows, one sequence's decode): 1 row warp x 4 token warps, so a block still
// has four warps to hide latency while it streams a memory-bound path.
//
// Blocks may be persistent (the host chooses, for many short items: schedule.hpp's
// persistent_blocks): as many as fit on the GPU at once, each taking a contiguous run of items,
// with an item's first tile loaded while the previous item's last one is computed; otherwise a
// block per item. A one-tile leaf item as a block of its own is a chain of dependent latencies
// (item, segment table, tile, merge) with its tile never in flight while anything else happens:
// MHA leaves ran at 1.7 TB/s (ncu, H100). The block first pulls its items' tables (items, segment
// ids, rows) into L1, so the loads that find the next item's tokens and queries do not wait on
// DRAM behind the K/V stream. (Handing items out
// from an atomic counter instead, so that blocks starting beside the wide launch take more,
// measured slower: MHA (256, 8192, 64) 0.214 against 0.200 ms. Pulling each next item's Q rows and
// segment tables into L1 as well changed nothing measurable.)
#include "dependent_launch.cuh"
#include "element.cuh"
#include "hydragen/merge.hpp"
#include "item_segments.cuh"
#include "launch.hpp"
#include "mma.cuh"
#include "online_softmax.cuh"
#include "params.hpp"
#include "row_output.cuh"

namespace hydragen::cuda {

template <int D>
struct MmaTile {
  static constexpr int kTokens = 64;     // tokens per K/V tile
  static constexpr int kStride = D + 8;  // shared row stride in elements: +16 bytes keeps ldmatrix conflict-free
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
  // Two stages, each a K tile and a V tile.
  template <typename T>
  static constexpr int smem_bytes() { return 2 * 2 * kTokens * kStride * static_cast<int>(sizeof(T)); }
};

// Three blocks per SM (kResidentBlocksPerSm): with 173 registers the wide kernel fit only two, and
// one block per SM ran the 64-row tiles at 0.7 TFLOP/s per SM (ncu, 2026-11-21): latency-bound.
template <typename T, int D, int ROW_WARPS, int TOKEN_WARPS>
__global__ void __launch_bounds__(ROW_WARPS * TOKEN_WARPS * 32, kResidentBlocksPerSm)
    segment_attention_mma(const SegmentAttentionParams p) {
  using Tile = MmaTile<D>;
  constexpr int KT = Tile::kTokens, STRIDE = Tile::kStride, THREADS = ROW_WARPS * TOKEN_WARPS * 32;
  constexpr int NT = KT / 8 / TOKEN_WARPS;  // 8-token fragments of a tile per warp
  static_assert(NT % 2 == 0, "P V takes the tile's tokens 16 at a time");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const stages = reinterpret_cast<T*>(smem_raw);  // [2][K, V][KT][STRIDE]
  auto k_stage = [&](int stage) { return stages + 2 * stage * KT * STRIDE; };
  auto v_stage = [&](int stage) { return stages + (2 * stage + 1) * KT * STRIDE; };
  // The item being computed and the next one (slot ^ 1), whose first tile is loaded meanwhile.
  __shared__ WorkItem items[2];
  __shared__ ItemSegments<T> segs[2];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row_warp = warp / TOKEN_WARPS, token_warp = warp % TOKEN_WARPS;
  const int tok0 = token_warp * (KT / TOKEN_WARPS);  // this warp's first token within a tile
  const T* const q = static_cast<const T*>(p.q);

  // Issues the copies of tile `tile` of `item` into `stage`; positions past token_end become zeros.
  // Thread c copies 16-byte chunks c, c + THREADS, ...: always the same column, rows 8 apart.
  auto load_tile = [&](const WorkItem& item, const ItemSegments<T>& seg, int tile, int stage) {
    const int p0 = item.token_begin + tile * KT;
    const int first = seg.find(p0);
    T* const k_dst = k_stage(stage);
    T* const v_dst = v_stage(stage);
    if (p0 + KT <= item.token_end && p0 + KT <= seg.start[first + 1]) {
      // The common case: the whole tile lies in one segment, rows a fixed stride apart.
      const long long stride = static_cast<long long>(p.kv_heads) * D;
      const long long base = seg.offset(first, p0, p.kv_heads, item.kv_head, D, 0);
      for (int c = threadIdx.x; c < KT * Tile::kChunks; c += THREADS) {
        const int row = c / Tile::kChunks, column = c % Tile::kChunks * 8;
        const long long off = base + row * stride + column;
        cp_async_16(k_dst + row * STRIDE + column, seg.k[first] + off, 16);
        cp_async_16(v_dst + row * STRIDE + column, seg.v[first] + off, 16);
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
          const int i = seg.find(pos);
          const long long off = seg.offset(i, pos, p.kv_heads, item.kv_head, D, column);
          k_src = seg.k[i] + off;
          v_src = seg.v[i] + off;
          bytes = 16;
        }
        cp_async_16(k_dst + row * STRIDE + column, k_src, bytes);
        cp_async_16(v_dst + row * STRIDE + column, v_src, bytes);
      }
    }
    cp_async_commit();
  };

  // This block's items: [first, last]. Items have tokens.
  const int first = static_cast<int>(static_cast<long long>(p.num_items) * blockIdx.x / gridDim.x);
  const int last = static_cast<int>(static_cast<long long>(p.num_items) * (blockIdx.x + 1) / gridDim.x) - 1;
  {
    const WorkItem a = p.items[first], b = p.items[last];
    prefetch_range_l1<THREADS>(p.items + first, (last - first + 1) * static_cast<long long>(sizeof(WorkItem)));
    prefetch_range_l1<THREADS>(p.item_segments + a.first_segment, 4LL * (b.first_segment + b.num_segments - a.first_segment));
    // The rows of the block's items, unless other items' rows lie between (narrow and wide items
    // number their rows in one sequence).
    if (b.first_row >= a.first_row && b.first_row + b.num_rows - a.first_row <= 4096) {
      prefetch_range_l1<THREADS>(p.row_query + a.first_row, 4LL * (b.first_row + b.num_rows - a.first_row));
      prefetch_range_l1<THREADS>(p.row_limit + a.first_row, 4LL * (b.first_row + b.num_rows - a.first_row));
    }
    if (threadIdx.x == 0) {
      items[0] = a;
      segs[0].fill(p, a);
    }
  }
  __syncthreads();
  int slot = 0, stage = 0;  // stage: where the current tile lands
  load_tile(items[0], segs[0], 0, 0);
  for (int index = first;; ++index) {
    const WorkItem item = items[slot];
    // Rows r0 and r1 = r0 + 8 of this lane (fragment rows g and g + 8).
    const int r0 = 16 * row_warp + g, r1 = r0 + 8;
    const bool has0 = r0 < item.num_rows, has1 = r1 < item.num_rows;
    const T* const q0 = has0 ? q + static_cast<long long>(p.row_query[item.first_row + r0]) * D : nullptr;
    const T* const q1 = has1 ? q + static_cast<long long>(p.row_query[item.first_row + r1]) * D : nullptr;
    // Positions of the item's token list each row sees: its causal limit, cut at the item's end.
    const int limit[2] = {has0 ? min(p.row_limit[item.first_row + r0], item.token_end) : 0,
                          has1 ? min(p.row_limit[item.first_row + r1], item.token_end) : 0};
    // Where the rows go (row_output.cuh): this lane's fragment rows, or, when the token warps merge
    // first, row threadIdx.x / GROUP of the merged states (GROUP lanes per row).
    constexpr int GROUP = THREADS / (16 * ROW_WARPS);
    RowOutput out[2];
    if constexpr (TOKEN_WARPS == 1) {
      out[0] = row_output(p, has0 ? item.first_row + r0 : -1);
      out[1] = row_output(p, has1 ? item.first_row + r1 : -1);
    } else {
      const int r = threadIdx.x / GROUP;
      out[0] = row_output(p, r < item.num_rows ? item.first_row + r : -1);
    }
    unsigned qa[D / 16][4];  // A fragments of Q, one per 16 columns
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      const int c = 16 * ks + 2 * t;
      qa[ks][0] = has0 ? *reinterpret_cast<const unsigned*>(q0 + c) : 0u;
      qa[ks][1] = has1 ? *reinterpret_cast<const unsigned*>(q1 + c) : 0u;
      qa[ks][2] = has0 ? *reinterpret_cast<const unsigned*>(q0 + c + 8) : 0u;
      qa[ks][3] = has1 ? *reinterpret_cast<const unsigned*>(q1 + c + 8) : 0u;
    }

    RowPairSoftmax<NT, D / 8> softmax;
    float acc[4 * (D / 8)] = {};  // O fragments: 8 columns each
    const int tiles = (item.token_end - item.token_begin + KT - 1) / KT;
    for (int it = 0; it < tiles; ++it) {
      // Load the tile after this one: the item's next, or the next item's first.
      const bool ahead = it + 1 < tiles || index < last;
      if (it + 1 < tiles) {
        load_tile(item, segs[slot], it + 1, stage ^ 1);
      } else if (ahead) {
        if (threadIdx.x == 0) {
          items[slot ^ 1] = p.items[index + 1];
          segs[slot ^ 1].fill(p, items[slot ^ 1]);
        }
        __syncthreads();
        load_tile(items[slot ^ 1], segs[slot ^ 1], 0, stage ^ 1);
      }
      if (ahead) {
        cp_async_wait<1>();
      } else {
        // The block's last tile: the merge may start once every block has reached its own
        // (dependent_launch.cuh). Allowed at the block's start instead, the early merge slowed
        // cuda-flash redundant (64, 4096, 0) from 0.062 to 0.065 ms (H100).
        allow_dependents();
        cp_async_wait<0>();
      }
      __syncthreads();
      const T* const ks_tile = k_stage(stage);
      const T* const vs_tile = v_stage(stage);

      float s[4 * NT] = {};  // S = Q K^T: 8 tokens per fragment
#pragma unroll
      for (int ks = 0; ks < D / 16; ks += 2) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          unsigned b[4];
          ldmatrix_x4(b, ks_tile + (tok0 + 8 * nt + lane % 8) * STRIDE + 16 * ks + 8 * (lane / 8));
          mma_16816<T>(s + 4 * nt, qa[ks], b[0], b[1]);
          mma_16816<T>(s + 4 * nt, qa[ks + 1], b[2], b[3]);
        }
      }
      const int p0 = item.token_begin + it * KT + tok0;
      float alpha[2];
      softmax.update(s, p0 + 2 * t, limit, p.scale_log2, p0 + KT / TOKEN_WARPS > min(limit[0], limit[1]), alpha);
      softmax.rescale(acc, alpha);

      // O += P V: P's accumulator layout is already the A layout of the next product.
#pragma unroll
      for (int kc = 0; kc < NT / 2; ++kc) {
        unsigned pa[4];
        probabilities_as_a<T, NT>(s, kc, pa);
#pragma unroll
        for (int np = 0; np < D / 16; ++np) {
          unsigned b[4];
          ldmatrix_x4_trans(b, vs_tile + (tok0 + 16 * kc + lane % 8 + (lane / 8 & 1) * 8) * STRIDE + 16 * np + (lane / 16) * 8);
          mma_16816<T>(acc + 8 * np, pa, b[0], b[1]);
          mma_16816<T>(acc + 8 * np + 4, pa, b[2], b[3]);
        }
      }
      __syncthreads();  // the next copies into this stage come after every warp is done with it
      stage ^= 1;
    }

    float inv[2], row_lse[2];
    softmax.finish(inv, row_lse);
    if constexpr (TOKEN_WARPS == 1) {
      finish_row_pair<T, D>(p, acc, 0, out[0], inv[0], row_lse[0], t);
      finish_row_pair<T, D>(p, acc, 1, out[1], inv[1], row_lse[1], t);
    } else {
      // Each token warp saw a quarter of every tile: merge their states in the stage the last tile
      // left (the other one is receiving the next item's first tile). The weights come from the core
      // merge once per row, not per column (per column, its exp and log1p were most of a one-tile
      // leaf block's instructions).
      constexpr int ROWS = 16 * ROW_WARPS;
      float* const o_states = reinterpret_cast<float*>(k_stage(stage ^ 1));  // [TOKEN_WARPS][ROWS][D]
      float* const lse_states = o_states + TOKEN_WARPS * ROWS * D;            // [TOKEN_WARPS][ROWS]
      float* const weights = lse_states + TOKEN_WARPS * ROWS;                 // [ROWS][TOKEN_WARPS]
      float* const merged_lse = weights + ROWS * TOKEN_WARPS;                 // [ROWS]
      static_assert((TOKEN_WARPS * ROWS * (D + 2) + ROWS) * 4 <= Tile::template smem_bytes<T>() / 2, "states fit in one stage");
#pragma unroll
      for (int r = 0; r < 2; ++r) {  // this lane's two fragment rows, as fp32 states
        const int row = r == 0 ? r0 : r1;
        if (row >= item.num_rows) continue;
        float o[D / 4];
        fragment_row<D>(acc, r, inv[r], o);
        store_values(o_states + (token_warp * ROWS + row) * D, o, FragmentColumns{t});
        if (t == 0) lse_states[token_warp * ROWS + row] = row_lse[r];
      }
      __syncthreads();
      if (threadIdx.x < item.num_rows) {
        const int r = threadIdx.x;
        float w[TOKEN_WARPS], lse = -INFINITY;
#pragma unroll
        for (int k = 0; k < TOKEN_WARPS; ++k) {  // fold state k in: the earlier weights scale by a
          const MergeWeights<float> mw = merge_weights(lse, lse_states[k * ROWS + r]);
#pragma unroll
          for (int j = 0; j < k; ++j) w[j] *= mw.a;
          w[k] = mw.b;
          lse = mw.lse;
        }
#pragma unroll
        for (int k = 0; k < TOKEN_WARPS; ++k) weights[r * TOKEN_WARPS + k] = w[k];
        merged_lse[r] = lse;
      }
      __syncthreads();
      // GROUP lanes per row, all rows at once: lane sub of a row holds columns sub + GROUP v.
      const int r = threadIdx.x / GROUP, sub = threadIdx.x % GROUP;
      const bool real = r < item.num_rows;
      float o[D / GROUP];
#pragma unroll
      for (int v = 0; v < D / GROUP; ++v) {
        o[v] = 0.f;
#pragma unroll
        for (int k = 0; k < TOKEN_WARPS; ++k) {
          o[v] += real ? weights[r * TOKEN_WARPS + k] * o_states[(k * ROWS + r) * D + sub + GROUP * v] : 0.f;
        }
      }
      const float lse = real ? merged_lse[r] : -INFINITY;
      __syncthreads();  // the next item's second tile goes into this stage
      finish_row<T, D, GROUP>(p, out[0], o, lse, StridedColumns<GROUP>{sub});
    }
    if (index == last) break;
    slot ^= 1;
  }
}

}  // namespace hydragen::cuda
