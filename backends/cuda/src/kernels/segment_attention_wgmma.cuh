#pragma once
// Segment attention on Hopper's warpgroup tensor cores (sm_90a, fp16/bf16): the wide items, up to
// 128 stacked query rows over one token range, two warpgroups of 64 rows each.
//
// Q (the block's rows) and 128-token K/V tiles live in shared memory in the 128-byte-swizzled
// layout wgmma reads directly (wgmma.cuh), filled by cp.async in two stages. Per tile and
// warpgroup: S = Q K^T (m64n128k16, both operands from shared memory, fp32 in registers), the
// online softmax on those registers (online_softmax.cuh), then O += P V with P as 16-bit register
// fragments (A from registers) and V from shared memory. Unlike mma.sync, no operand passes through
// the register file on its way to the tensor cores, which is what capped the 64-row kernel
// (perf-notes v3: 256 bytes of shared-memory reads per 4096-FLOP MMA).
#include "element.cuh"
#include "item_segments.cuh"
#include "mma.cuh"
#include "online_softmax.cuh"
#include "params.hpp"
#include "wgmma.cuh"

namespace hydragen::cuda {

template <int D>
struct WgmmaTile {
  static constexpr int kRows = 128;   // query rows per block: two warpgroups of 64
  static constexpr int kTokens = 128;  // tokens per K/V tile (the N of S = Q K^T)
  static constexpr int kThreads = 256;
  static constexpr int kRowBytes = 128;         // one swizzled row: 64 16-bit values
  static constexpr int kChunks = D / 8;         // 16-byte chunks per row of Q, K or V
  static constexpr int kQBytes = kRows * D * 2;      // [D / 64][kRows][128 B]
  static constexpr int kKvBytes = kTokens * D * 2;   // one K or V tile: [D / 64][kTokens][128 B]
  // 1 KB of slack to align the swizzle atoms, Q, and two stages of K and V.
  static constexpr int kSmemBytes = 1024 + kQBytes + 2 * 2 * kKvBytes;
};

template <typename T, int D>
__global__ void __launch_bounds__(256, 1) segment_attention_wgmma(const SegmentAttentionParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = WgmmaTile<D>;
  constexpr int KT = Tile::kTokens, ROWS = Tile::kRows, THREADS = Tile::kThreads, CHUNKS = Tile::kChunks;
  constexpr int NS = KT / 8;  // 8-token fragments of a score tile
  extern __shared__ unsigned char smem_raw[];
  // [Q | K stage 0 | V stage 0 | K stage 1 | V stage 1], each 1024-aligned.
  unsigned char* const smem = smem_raw + ((1024 - smem_address(smem_raw) % 1024) % 1024);
  unsigned char* const sq = smem;
  auto sk = [&](int stage) { return smem + Tile::kQBytes + stage * 2 * Tile::kKvBytes; };
  auto sv = [&](int stage) { return sk(stage) + Tile::kKvBytes; };
  __shared__ ItemSegments<T> segs;

  const WorkItem item = p.items[blockIdx.x];
  segs.load(p, item);
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const bool active = wg * 64 < item.num_rows;  // uniform per warpgroup (wgmma is collective)

  // Q: row r of the block is query row row_query[first_row + r]; rows past num_rows are zeros.
  const T* const q = static_cast<const T*>(p.q);
  for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {
    const int r = c / CHUNKS, col = c % CHUNKS * 8;
    const bool real = r < item.num_rows;
    const T* src = real ? q + static_cast<long long>(p.row_query[item.first_row + r]) * D + col : q;
    cp_async_16(sq + col / 64 * ROWS * Tile::kRowBytes + swizzle128(r, col % 64), src, real ? 16 : 0);
  }

  // Issues the copies of tile `tile` into `stage`; positions past token_end become zeros.
  auto load_tile = [&](int tile, int stage) {
    const int p0 = item.token_begin + tile * KT;
    const int first = segs.find(p0);
    unsigned char* const k_dst = sk(stage);
    unsigned char* const v_dst = sv(stage);
    const bool one_segment = p0 + KT <= item.token_end && p0 + KT <= segs.start[first + 1];
    const long long stride = static_cast<long long>(p.kv_heads) * D;
    const long long base = segs.offset(first, p0, p.kv_heads, item.kv_head, D, 0);
    for (int c = threadIdx.x; c < KT * CHUNKS; c += THREADS) {
      const int row = c / CHUNKS, col = c % CHUNKS * 8;
      const int at = col / 64 * KT * Tile::kRowBytes + swizzle128(row, col % 64);
      const T* k_src = q;  // any valid address: nothing is read when the size is 0
      const T* v_src = q;
      int bytes = 16;
      if (one_segment) {  // the common case: rows a fixed stride apart
        k_src = segs.k[first] + base + row * stride + col;
        v_src = segs.v[first] + base + row * stride + col;
      } else if (p0 + row < item.token_end) {
        const int i = segs.find(p0 + row);
        const long long off = segs.offset(i, p0 + row, p.kv_heads, item.kv_head, D, col);
        k_src = segs.k[i] + off;
        v_src = segs.v[i] + off;
      } else {
        bytes = 0;
      }
      cp_async_16(k_dst + at, k_src, bytes);
      cp_async_16(v_dst + at, v_src, bytes);
    }
    cp_async_commit();
  };

  // This lane's rows within the block, and the positions of the token list each sees.
  const int r0 = wg * 64 + warp * 16 + g, r1 = r0 + 8;
  const bool has0 = r0 < item.num_rows, has1 = r1 < item.num_rows;
  const int limit[2] = {has0 ? min(p.row_limit[item.first_row + r0], item.token_end) : 0,
                        has1 ? min(p.row_limit[item.first_row + r1], item.token_end) : 0};

  const unsigned q_at = smem_address(sq) + wg * 64 * Tile::kRowBytes;
  RowPairSoftmax<NS, D / 8> softmax;
  float o[D / 2] = {};  // O: 8-column fragments, wgmma accumulator layout
  const int tiles = (item.token_end - item.token_begin + KT - 1) / KT;
  load_tile(0, 0);  // committed together with Q
  for (int it = 0; it < tiles; ++it) {
    if (it + 1 < tiles) {
      load_tile(it + 1, (it + 1) & 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_proxy_async();  // this thread's copies, visible to wgmma once all threads pass the barrier
    __syncthreads();
    if (active) {
      const unsigned k_at = smem_address(sk(it & 1)), v_at = smem_address(sv(it & 1));
      float s[KT / 2];
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {  // 16 columns of Q and K at a time
        const unsigned column = (ks % 4) * 32;  // 16 values of a swizzled row: the hardware applies the XOR
        wgmma_ss<T, KT>(s, wgmma_descriptor(q_at + ks / 4 * ROWS * Tile::kRowBytes + column, 16, 1024),
                        wgmma_descriptor(k_at + ks / 4 * KT * Tile::kRowBytes + column, 16, 1024), ks > 0);
      }
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_hold(s);

      const int p0 = item.token_begin + it * KT;
      softmax.update(s, o, p0 + 2 * t, limit, p.scale_log2, p0 + KT > min(limit[0], limit[1]));

      unsigned pa[KT / 16][4];  // P as 16-bit A fragments; must live until the products complete
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) probabilities_as_a<T, NS>(s, kc, pa[kc]);
      wgmma_fence();
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) {  // 16 tokens at a time
        wgmma_rs<T, D>(o, pa[kc], wgmma_descriptor(v_at + kc * 16 * Tile::kRowBytes, KT * Tile::kRowBytes, 1024), 1);
      }
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_hold(o);
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) {
#pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(pa[kc][i])::"memory");
      }
    }
    __syncthreads();  // the next iteration's copies overwrite this stage
  }

  float inv[2], lse[2];
  softmax.finish(inv, lse);
  const long long first = item.first_row;
  if (has0) store_row<D / 8>(o, 0, inv[0], lse[0], p.partial_o + (first + r0) * D, p.partial_lse + first + r0, t);
  if (has1) store_row<D / 8>(o, 1, inv[1], lse[1], p.partial_o + (first + r1) * D, p.partial_lse + first + r1, t);
#else
  __trap();  // built without sm_90a: the host never selects this kernel (hopper_kernels_built())
#endif
}

}  // namespace hydragen::cuda
