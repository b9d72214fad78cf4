#pragma once
// Segment attention on Hopper's warpgroup tensor cores (sm_90a, fp16/bf16): the wide items of the
// segment schedule, up to 128 stacked query rows over one segment's token range.
//
// A block is two consumer warpgroups (64 rows each) and a producer warpgroup. The producer streams
// 128-token K and V tiles into shared memory with TMA (two stages each, mbarriers full/empty), in
// the 128-byte-swizzled layout wgmma reads directly (wgmma.cuh). Per tile, a consumer warpgroup
// issues S_i = Q K_i^T (both operands in shared memory) together with O += P_{i-1} V_{i-1} (P as
// 16-bit register fragments), then runs the online softmax of S_i while the other warpgroup has the
// tensor cores: the two take turns through a pair of named barriers (ping-pong), so the exp2 of one
// overlaps the matrix products of the other. K stages are released when S is done, V stages when
// the product that read them is, so each stage is refilled as early as possible.
#include <type_traits>

#include "async_copy.cuh"
#include "dependent_launch.cuh"
#include "element.cuh"
#include "mma.cuh"
#include "online_softmax.cuh"
#include "params.hpp"
#include "row_output.cuh"
#include "wgmma.cuh"

namespace hydragen::cuda {

template <int D>
struct WgmmaTile {
  static constexpr int kRows = 128;    // query rows per block: two warpgroups of 64
  static constexpr int kTokens = 128;  // tokens per K/V tile (the N of S = Q K^T)
  static constexpr int kConsumers = 256;
  static constexpr int kThreads = kConsumers + 128;  // + the producer warpgroup (one thread issues)
  // Registers are allocated per warpgroup: 65536 / 384 = 168 each by default; the producer gives
  // most of its share to the consumers (setmaxnreg), which hold S, O and P (160 live values).
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static constexpr int kRowBytes = 128;             // one swizzled row: 64 16-bit values (a TMA box row)
  static constexpr int kQBytes = kRows * D * 2;     // [D / 64][kRows][128 B]
  static constexpr int kKvBytes = kTokens * D * 2;  // one K or V tile: [D / 64][kTokens][128 B]
  // 1 KB of slack to align the swizzle atoms; Q, two K stages, two V stages.
  static constexpr int kSmemBytes = 1024 + kQBytes + 4 * kKvBytes;
};

template <typename T, int D>
__global__ void __launch_bounds__(WgmmaTile<D>::kThreads, 1) segment_attention_wgmma(const SegmentAttentionParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  allow_dependents();  // the merge may start once every block has (dependent_launch.cuh)
  using Tile = WgmmaTile<D>;
  constexpr int KT = Tile::kTokens, ROWS = Tile::kRows, NS = KT / 8, CHUNKS = D / 8;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = smem_raw + ((1024 - smem_address(smem_raw) % 1024) % 1024);
  const unsigned q_at = smem_address(smem);  // [Q | K0 | K1 | V0 | V1], each 1024-aligned
  auto k_at = [&](int stage) { return q_at + Tile::kQBytes + stage * Tile::kKvBytes; };
  auto v_at = [&](int stage) { return q_at + Tile::kQBytes + (2 + stage) * Tile::kKvBytes; };
  __shared__ __align__(8) unsigned long long barriers[8];
  const unsigned bar0 = smem_address(barriers);
  // Full: the tile has landed (1 arrival + TMA bytes). Empty: the 8 consumer warps are done with it.
  auto full_k = [&](int stage) { return bar0 + 8 * stage; };
  auto full_v = [&](int stage) { return bar0 + 8 * (2 + stage); };
  auto empty_k = [&](int stage) { return bar0 + 8 * (4 + stage); };
  auto empty_v = [&](int stage) { return bar0 + 8 * (6 + stage); };

  const WorkItem item = p.items[blockIdx.x];
  const int tiles = (item.token_end - item.token_begin + KT - 1) / KT;
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < 2; ++stage) {
      mbarrier_init(full_k(stage), 1);
      mbarrier_init(full_v(stage), 1);
      mbarrier_init(empty_k(stage), 8);
      mbarrier_init(empty_v(stage), 8);
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the producer leaves the consumers' path here

  // The warpgroup index through a shuffle, so the compiler sees a warp-uniform value: a branch on
  // threadIdx.x looks divergent to it, and ptxas then serializes every wgmma after that branch
  // (C7520: each one waited for before the next issues).
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (wg == 2) {  // the producer warpgroup: one thread issues every copy
    setmaxnreg_dec<Tile::kProducerRegisters>();
    if (threadIdx.x == Tile::kConsumers) {
      // Use u of a stage waits for the consumers' release of use u - 1 (parity of u - 1; a fresh
      // barrier passes parity 1 at once).
      const unsigned char* const maps = static_cast<const unsigned char*>(p.kv_maps) +
                                        2 * kTensorMapBytes * p.item_segments[item.first_segment];
      for (int it = 0; it < tiles; ++it) {
        const int stage = it & 1;
        const unsigned free_parity = ((it >> 1) & 1) ^ 1;
        const int p0 = item.token_begin + it * KT;
        mbarrier_wait(empty_k(stage), free_parity);
        mbarrier_arrive_expect(full_k(stage), Tile::kKvBytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          tma_load_3d(k_at(stage) + cb * KT * Tile::kRowBytes, maps, 64 * cb, item.kv_head, p0, full_k(stage));
        }
        mbarrier_wait(empty_v(stage), free_parity);
        mbarrier_arrive_expect(full_v(stage), Tile::kKvBytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          tma_load_3d(v_at(stage) + cb * KT * Tile::kRowBytes, maps + kTensorMapBytes, 64 * cb, item.kv_head, p0,
                      full_v(stage));
        }
      }
    }
    return;
  }

  setmaxnreg_inc<Tile::kConsumerRegisters>();
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  // Q: row r of the block is query row row_query[first_row + r]; rows past num_rows are zeros.
  const T* const q = static_cast<const T*>(p.q);
  for (int c = threadIdx.x; c < ROWS * CHUNKS; c += Tile::kConsumers) {
    const int r = c / CHUNKS, col = c % CHUNKS * 8;
    const bool real = r < item.num_rows;
    const T* src = real ? q + static_cast<long long>(p.row_query[item.first_row + r]) * D + col : q;
    cp_async_16(smem + col / 64 * ROWS * Tile::kRowBytes + swizzle128(r, col % 64), src, real ? 16 : 0);
  }
  cp_async_commit();

  // This lane's rows within the block, and the positions of the token list each sees.
  const int r0 = wg * 64 + warp * 16 + g, r1 = r0 + 8;
  const bool has0 = r0 < item.num_rows, has1 = r1 < item.num_rows;
  const int limit[2] = {has0 ? min(p.row_limit[item.first_row + r0], item.token_end) : 0,
                        has1 ? min(p.row_limit[item.first_row + r1], item.token_end) : 0};
  const RowOutput out0 = row_output(p, has0 ? item.first_row + r0 : -1);
  const RowOutput out1 = row_output(p, has1 ? item.first_row + r1 : -1);
  cp_async_wait<0>();
  fence_proxy_async();
  named_sync(1, Tile::kConsumers);  // Q complete for both warpgroups
  constexpr int kTurn = 2;          // named barriers 2 and 3: warpgroup 0's and 1's turn
  if (wg == 1) named_arrive(kTurn, Tile::kConsumers);  // warpgroup 0 goes first

  const unsigned q_wg = q_at + wg * 64 * Tile::kRowBytes;
  RowPairSoftmax<NS, D / 8> softmax;
  float o[D / 2] = {};  // O: 8-column fragments, wgmma accumulator layout
  float s[KT / 2];      // S of the current tile, then its probabilities
  unsigned pa[KT / 16][4];  // P of the previous tile as A fragments: live until its product lands
  // Step i issues S_i (i < tiles) and P_{i-1} V_{i-1} (i > 0). The first and last steps are
  // separate instantiations, so no wgmma or wait sits under a runtime condition: ptxas serializes
  // the wgmmas (C7514) when it cannot prove an accumulator is complete where it is read.
  auto step = [&](int i, auto issue_s, auto issue_pv) {
    constexpr bool has_s = decltype(issue_s)::value, has_pv = decltype(issue_pv)::value;
    if constexpr (has_s) mbarrier_wait(full_k(i & 1), (i >> 1) & 1);
    if constexpr (has_pv) mbarrier_wait(full_v((i - 1) & 1), ((i - 1) >> 1) & 1);
    named_sync(kTurn + wg, Tile::kConsumers);
    wgmma_fence();
    if constexpr (has_s) {
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {  // 16 columns at a time: chunk pairs of a swizzled row
        const unsigned column = (ks % 4) * 32;  // the hardware applies the swizzle to the address
        wgmma_ss<T, KT>(s, wgmma_descriptor(q_wg + ks / 4 * ROWS * Tile::kRowBytes + column, 16, 1024),
                        wgmma_descriptor(k_at(i & 1) + ks / 4 * KT * Tile::kRowBytes + column, 16, 1024), ks > 0);
      }
      wgmma_commit();
    }
    if constexpr (has_pv) {
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) {  // 16 tokens at a time
        wgmma_rs<T, D>(o, pa[kc],
                       wgmma_descriptor(v_at((i - 1) & 1) + kc * 16 * Tile::kRowBytes, KT * Tile::kRowBytes, 1024), 1);
      }
      wgmma_commit();
    }
    if (has_s || wg == 0) named_arrive(kTurn + 1 - wg, Tile::kConsumers);  // the other's turn

    float alpha[2];
    if constexpr (has_s) {
      wgmma_wait<has_pv ? 1 : 0>();
      wgmma_hold(s);
      __syncwarp();
      if (lane == 0) mbarrier_arrive(empty_k(i & 1));
      const int p0 = item.token_begin + i * KT;
      softmax.update(s, p0 + 2 * t, limit, p.scale_log2, p0 + KT > min(limit[0], limit[1]), alpha);
    }
    if constexpr (has_pv) {
      wgmma_wait<0>();
      wgmma_hold(o);
      wgmma_hold(pa);
      __syncwarp();
      if (lane == 0) mbarrier_arrive(empty_v((i - 1) & 1));
    }
    if constexpr (has_s) {
      if constexpr (has_pv) softmax.rescale(o, alpha);  // O holds P V up to tile i - 1 now (zero before)
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) probabilities_as_a<T, NS>(s, kc, pa[kc]);
    }
  };
  using yes = std::true_type;
  using no = std::false_type;
  step(0, yes{}, no{});  // items have at least one token (the schedules never make an empty one)
  for (int i = 1; i < tiles; ++i) step(i, yes{}, yes{});
  step(tiles, no{}, yes{});

  float inv[2], lse[2];
  softmax.finish(inv, lse);
  finish_row_pair<T, D>(p, o, 0, out0, inv[0], lse[0], t);
  finish_row_pair<T, D>(p, o, 1, out1, inv[1], lse[1], t);
#else
  __trap();  // built without sm_90a: the host never selects this kernel (wide_kernel)
#endif
}

}  // namespace hydragen::cuda
