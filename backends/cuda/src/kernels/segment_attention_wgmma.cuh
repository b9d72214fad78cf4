#pragma once
// Segment attention on Hopper's warpgroup tensor cores (sm_90a, fp16/bf16): the wide items of the
// segment schedule, up to 128 stacked query rows over one segment's token range.
//
// A block is two consumer warpgroups (64 rows each) and a producer warpgroup. The kernel's steps:
//   load     produce_kv_tiles: the producer streams KT-token K and V tiles (128 or 192: rule wide_tile)
//            into shared memory with TMA (kStages stages each, mbarriers full/empty), in the 128-byte-swizzled layout wgmma
//            reads directly (wgmma.cuh); load_q: the consumers copy their Q rows
//   compute  consume_kv_tiles: per tile, a consumer warpgroup issues S_i = Q K_i^T (both operands in
//            shared memory) with O += P_{i-1} V_{i-1} (P as 16-bit register fragments), then runs
//            the online softmax of S_i while the other warpgroup has the tensor cores: the two take
//            turns through a pair of named barriers (ping-pong), so the exp2 of one overlaps the
//            matrix products of the other. O is rescaled for tile i - 1's max between the two issues,
//            while S_i runs. ptxas places the wait for P_{i-1} V_{i-1} above S_i's softmax; the exps
//            forced ahead of it, to overlap the warpgroup's own product too, ran slower
//            (kernel-notes: softmax-after-pv-wait). With 192-token tiles at D = 128 the exps do not wait
//            for the tile's max (kernel-notes: exps-before-max). K stages are released when S is done, V stages
//            when the product that read them is, so each stage is refilled as early as possible.
//   store    store_direct_rows through the Q tile where the warp's rows are their queries' only ones,
//            else row_output.cuh; with CLUSTER (a row block's parts as one cluster, rule part_merge)
//            combine_cluster_rows first folds the cluster's copies of each row through shared memory
// With LEAVES (LaunchRecipe::leaves_inside) the producer warpgroup's other three warps run narrow
// items (params.leaf_items) as the warp kernel's workers with the token product, each with its own
// two stages after the block's, while the consumers compute: the leaves' bytes stream on SMs whose
// tensor cores are busy, where a wgmma block alone reads little of what an SM can.
#include <type_traits>

#include "async_copy.cuh"
#include "cluster.cuh"
#include "dependent_launch.cuh"
#include "hydragen/cuda/element.cuh"
#include "leaf_length.cuh"
#include "mma.cuh"
#include "online_softmax.cuh"
#include "segment_attention_mma.cuh"
#include "params.hpp"
#include "row_output.cuh"
#include "tile_config.hpp"
#include "wgmma.cuh"
#include "worker_items.cuh"

namespace hydragen::cuda {

// One block's shared memory: Q and the K and V stages, each 1024-aligned (the swizzle atom), and
// the stages' barriers. Full: the tile has landed (one arrival + the TMA bytes). Empty: the 8
// consumer warps are done with it.
template <int D, int KT>
struct WgmmaSharedStorage {
  using Tile = WgmmaTile<D, KT>;
  alignas(1024) unsigned char q[Tile::kQBytes];                   // [D / 64][kRows][128 B]
  alignas(1024) unsigned char k[Tile::kStages][Tile::kKvBytes];  // [stage][D / 64][kTokens][128 B]
  alignas(1024) unsigned char v[Tile::kStages][Tile::kKvBytes];
  unsigned long long full_k[Tile::kStages], full_v[Tile::kStages];
  unsigned long long empty_k[Tile::kStages], empty_v[Tile::kStages];

  // Where Q's element (row, col) lies: column blocks of 64, each row's 128 bytes swizzled.
  __device__ unsigned char* q_at(int row, int col) {
    return q + col / 64 * Tile::kRows * Tile::kRowBytes + swizzle128(row, col % 64);
  }

  // Dynamic shared memory is only 16-byte aligned: the launch asks for 1 KB more.
  static constexpr int kLaunchBytes = static_cast<int>(sizeof(WgmmaSharedStorage)) + 1024;
};

// The leaf warps' tiles (kWgmmaLeafWarps warp workers), after a block's WgmmaSharedStorage.
template <int D>
using WgmmaLeafTile = MmaBlockTile<D, 1, kWgmmaLeafWarps>;

// The launch's dynamic shared memory: the block's, and its leaf warps' stages.
template <int D, int KT, bool LEAVES>
constexpr int wgmma_launch_bytes() {
  return WgmmaSharedStorage<D, KT>::kLaunchBytes + (LEAVES ? WgmmaLeafTile<D>::kSmemBytes : 0);
}

// The consumers' named barriers (id 0 is __syncthreads').
enum class WgmmaBarrier : int {
  q_ready = 1,      // Q has landed, for both warpgroups
  turn0 = 2,        // warpgroup 0's turn at the tensor cores
  turn1 = 3,        // warpgroup 1's
  stages_done = 4,  // both warpgroups' products are done with the stages (combine_cluster_rows)
};

__device__ __forceinline__ void consumer_sync(WgmmaBarrier b) { named_sync(static_cast<int>(b), kWgmmaConsumerThreads); }
__device__ __forceinline__ void consumer_arrive(WgmmaBarrier b) { named_arrive(static_cast<int>(b), kWgmmaConsumerThreads); }
__device__ __forceinline__ WgmmaBarrier turn_of(int wg) {
  return static_cast<WgmmaBarrier>(static_cast<int>(WgmmaBarrier::turn0) + wg);
}

// The stage of the block's tile use u, and the parity of its barriers' phase for that use: stages are
// taken in turn, the barriers' phases alternate with each round of the stages.
__device__ __forceinline__ int stage_of(int u) { return u % kWgmmaStages; }
__device__ __forceinline__ unsigned phase_of(int u) { return (u / kWgmmaStages) & 1; }

// One K or V tile of KT tokens from `p0`, [D / 64][KT][128 B]: a TMA box of 64 columns x 64 tokens at
// a time, completing on `full`, its lines kept in L2 last: the row blocks and parts of a shared segment
// read the same tiles, while leaves stream beside them (kernel-notes: l2-priorities). Each block loads
// its own: shared by a cluster's two blocks, they ran slower (kernel-notes: kv-tiles-per-block).
template <int D, int KT>
__device__ __forceinline__ void load_kv_tile_boxes(unsigned tile, const void* map, int kv_head, int p0, unsigned full) {
  const unsigned long long keep = l2_evict_last();
#pragma unroll
  for (int cb = 0; cb < D / 64; ++cb) {
#pragma unroll
    for (int tb = 0; tb < KT / kWgmmaBoxTokens; ++tb) {
      tma_load_3d(tile + (cb * KT + tb * kWgmmaBoxTokens) * WgmmaTile<D, KT>::kRowBytes, map, 64 * cb, kv_head,
                  p0 + tb * kWgmmaBoxTokens, full, keep);
    }
  }
}

// Load step (the producer's one thread): every K and V tile of the item, the block's tiles
// [used, used + tiles) (a persistent block's items continue the stages' uses). Use u of a stage
// waits for the consumers' release of its previous use (the other parity; a fresh barrier passes
// parity 1 at once). The item's segment's descriptors come from kv_maps in global memory
// (kernel-notes: descriptors-in-memory).
template <int D, int KT>
__device__ __forceinline__ void produce_kv_tiles(const SegmentAttentionParams& p, const WorkItem& item, int used,
                                                 int tiles, WgmmaSharedStorage<D, KT>& smem) {
  using Tile = WgmmaTile<D, KT>;
  const unsigned char* const maps =
      static_cast<const unsigned char*>(p.kv_maps) + 2 * kTensorMapBytes * p.item_segments[item.first_segment];
  for (int it = 0; it < tiles; ++it) {
    const int stage = stage_of(used + it);
    const unsigned free_parity = phase_of(used + it) ^ 1;
    const int p0 = item.token_begin + it * KT;
    mbarrier_wait(smem_address(&smem.empty_k[stage]), free_parity);
    mbarrier_arrive_expect(smem_address(&smem.full_k[stage]), Tile::kKvBytes);
    load_kv_tile_boxes<D, KT>(smem_address(smem.k[stage]), maps, item.kv_head, p0, smem_address(&smem.full_k[stage]));
    mbarrier_wait(smem_address(&smem.empty_v[stage]), free_parity);
    mbarrier_arrive_expect(smem_address(&smem.full_v[stage]), Tile::kKvBytes);
    load_kv_tile_boxes<D, KT>(smem_address(smem.v[stage]), maps + kTensorMapBytes, item.kv_head, p0, smem_address(&smem.full_v[stage]));
  }
}

// Load step (the consumers): row r of the block is query row row_query[first_row + r]; rows past
// num_rows are zeros. Every row id the thread needs is loaded before any copy is issued: a loop that
// loads an id and then copies its row waits on the ids' lines one round trip at a time, and at a
// block's start, with the plan's tables in DRAM, that chain is the block's first microseconds
// (perf-notes v39). Completes with cp_async_wait and the q_ready barrier.
template <typename T, int D, int KT>
__device__ __forceinline__ void load_q(const SegmentAttentionParams& p, const WorkItem& item, WgmmaSharedStorage<D, KT>& smem) {
  using Tile = WgmmaTile<D, KT>;
  constexpr int CHUNKS = D / 8, COPIES = Tile::kRows * CHUNKS / Tile::kConsumerThreads;  // 16-byte copies a thread
  static_assert(Tile::kRows * CHUNKS % Tile::kConsumerThreads == 0, "the consumers copy Q in equal shares");
  static_assert(Tile::kConsumerThreads % CHUNKS == 0, "a thread's copies share one column (col below)");
  const T* const q = static_cast<const T*>(p.q);
  constexpr int STEP = Tile::kConsumerThreads / CHUNKS;  // rows between a thread's copies
  const int col = threadIdx.x % CHUNKS * 8;                // the same column in each of the thread's rows
  const int first = threadIdx.x / CHUNKS;                  // copy i's row: first + i * STEP
  int query[COPIES];
#pragma unroll
  for (int i = 0; i < COPIES; ++i) {
    query[i] = first + i * STEP < item.num_rows ? p.row_query[item.first_row + first + i * STEP] : -1;
  }
#pragma unroll
  for (int i = 0; i < COPIES; ++i) {
    const bool real = query[i] >= 0;
    const T* const src = real ? q + static_cast<long long>(query[i]) * D + col : q;
    cp_async_16(smem.q_at(first + i * STEP, col), src, real ? 16 : 0);
  }
  cp_async_commit();
}

// Compute step (one consumer warpgroup `wg`): every tile of the item into O and the softmax state,
// the block's tiles [used, used + tiles) as produce_kv_tiles loads them. Step i issues S_i
// (i < tiles) and P_{i-1} V_{i-1} (i > 0). The first and last steps are separate instantiations,
// so no wgmma or wait sits under a runtime condition: ptxas serializes the wgmmas (C7514) when it
// cannot prove an accumulator is complete where it is read (kernel-notes: unserialized-wgmma).
template <typename T, int D, int KT>
__device__ __forceinline__ void consume_kv_tiles(WgmmaSharedStorage<D, KT>& smem, const WorkItem& item, int used, int tiles,
                                                 int wg, const int (&limit)[2], float scale_log2,
                                                 RowPairSoftmax<KT / 8>& softmax,
                                                 float (&o)[D / 2]) {
  using Tile = WgmmaTile<D, KT>;
  constexpr int ROWS = Tile::kRows;
  const int lane = threadIdx.x % 32, t = lane % 4;
  const unsigned q_wg = smem_address(smem.q) + wg * 64 * Tile::kRowBytes;
  float s[KT / 2];          // S of the current tile, then its probabilities
  unsigned pa[KT / 16][4];  // P of the previous tile as A fragments: live until its product lands
  float alpha[2] = {};      // the last tile's rescale of O, applied before O's next product
  auto step = [&](int i, auto issue_s, auto issue_pv) {
    constexpr bool has_s = decltype(issue_s)::value, has_pv = decltype(issue_pv)::value;
    const int u = used + i;  // the block's use of the stages for tile i
    const int ks = stage_of(u), vs = stage_of(u - 1);
    if constexpr (has_s) mbarrier_wait(smem_address(&smem.full_k[ks]), phase_of(u));
    if constexpr (has_pv) mbarrier_wait(smem_address(&smem.full_v[vs]), phase_of(u - 1));
    consumer_sync(turn_of(wg));
    wgmma_fence();
    if constexpr (has_s) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {     // 16 columns at a time: chunk pairs of a swizzled row
        const unsigned column = (kk % 4) * 32;  // the hardware applies the swizzle to the address
        wgmma_ss<T, KT>(s, wgmma_descriptor(q_wg + kk / 4 * ROWS * Tile::kRowBytes + column, 16, 1024),
                        wgmma_descriptor(smem_address(smem.k[ks]) + kk / 4 * KT * Tile::kRowBytes + column, 16, 1024),
                        kk > 0);
      }
      wgmma_commit();
    }
    if constexpr (has_pv) {
      softmax.rescale(o, alpha);  // O holds P V up to tile i - 2: to tile i - 1's max (zero before)
      wgmma_fence();
#pragma unroll
      for (int kc = 0; kc < KT / 16; ++kc) {  // 16 tokens at a time
        wgmma_rs<T, D>(o, pa[kc],
                       wgmma_descriptor(smem_address(smem.v[vs]) + kc * 16 * Tile::kRowBytes, KT * Tile::kRowBytes,
                                        1024),
                       1);
      }
      wgmma_commit();
    }
    if (has_s || wg == 0) consumer_arrive(turn_of(1 - wg));  // the other's turn

    // With 192-token tiles at D = 128, after the first tile: the exps against the running max, the
    // tile's max beside them, where no row's max moves far (kernel-notes: exps-before-max); else in order.
    constexpr bool kExpsFirst = has_pv && KT > 128 && D == 128;
    const int p0 = item.token_begin + i * KT;
    const bool mask = p0 + KT > min(limit[0], limit[1]);
    if constexpr (has_s) {
      wgmma_wait<has_pv ? 1 : 0>();
      wgmma_hold(s);
      __syncwarp();
      if (lane == 0) mbarrier_arrive(smem_address(&smem.empty_k[ks]));
      if constexpr (!kExpsFirst) softmax.update(s, p0 + 2 * t, limit, scale_log2, mask, alpha);
    }
    if constexpr (has_pv) {
      wgmma_wait<0>();
      wgmma_hold(o);
      wgmma_hold(pa);
      __syncwarp();
      if (lane == 0) mbarrier_arrive(smem_address(&smem.empty_v[vs]));
    }
    if constexpr (has_s) {
      if (!(kExpsFirst && __all_sync(0xffffffffu, !mask) &&
            softmax.template update_within_drift<T>(s, scale_log2, pa, alpha))) {
        if constexpr (kExpsFirst) softmax.update(s, p0 + 2 * t, limit, scale_log2, mask, alpha);
#pragma unroll
        for (int kc = 0; kc < KT / 16; ++kc) probabilities_as_a<T, KT / 8>(s, kc, pa[kc]);
      }
    }
  };
  using yes = std::true_type;
  using no = std::false_type;
  step(0, yes{}, no{});  // items have at least one token (the schedules never make an empty one)
  for (int i = 1; i < tiles; ++i) step(i, yes{}, yes{});
  step(tiles, no{}, yes{});
}

// Tiles of an item.
template <int KT>
__device__ __forceinline__ int item_tiles(const WorkItem& item) {
  return (item.token_end - item.token_begin + KT - 1) / KT;
}

// Store step where each of the warp's 16 rows is its query's only partial row (RowOutput::direct): the
// rows of O through the warp's own rows of the Q tile, which no product reads again (its warpgroup's
// last S has landed), then 16-byte stores, a row's D * 2 bytes from D / 8 lanes together
// (kernel-notes: staged-o-store).
// `row_values(r, o)` gives the lane's D / 4 values of its row r (0 or 1), normalized, at FragmentColumns{t}.
template <typename T, int D, int KT, typename RowValues>
__device__ __forceinline__ void store_direct_rows(const SegmentAttentionParams& p, RowValues row_values,
                                                  const float (&lse)[2], const RowOutput& out0, const RowOutput& out1,
                                                  int wg, WgmmaSharedStorage<D, KT>& smem) {
  constexpr int CHUNKS = D / 8, ROWS_AT_ONCE = 32 / CHUNKS;  // 16-byte chunks of a row; rows per warp store
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int first = wg * 64 + threadIdx.x / 32 % 4 * 16;  // the warp's first row in the block
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float o[D / 4];
    row_values(r, o);
    const FragmentColumns columns{t};
#pragma unroll
    for (int v = 0; v < D / 4; v += 2) {
      *reinterpret_cast<unsigned*>(smem.q_at(first + g + 8 * r, columns(v))) = pack2<T>(o[v], o[v + 1]);
    }
  }
  __syncwarp();
  const int query[2] = {out0.row >= 0 ? out0.query : -1, out1.row >= 0 ? out1.query : -1};  // -1: past the item's rows
#pragma unroll
  for (int k = 0; k < 16 / ROWS_AT_ONCE; ++k) {
    const int row = k * ROWS_AT_ONCE + lane / CHUNKS, c = lane % CHUNKS;
    const int holder = 4 * (row % 8);  // the lanes of row g hold it as their row g (below 8) or g + 8
    const int q0 = __shfl_sync(0xffffffffu, query[0], holder), q1 = __shfl_sync(0xffffffffu, query[1], holder);
    const int q = row < 8 ? q0 : q1;
    const uint4 chunk = *reinterpret_cast<const uint4*>(smem.q_at(first + row, 8 * c));
    if (q >= 0) *reinterpret_cast<uint4*>(static_cast<T*>(p.merge.o) + static_cast<long long>(q) * D + 8 * c) = chunk;
  }
  if (t == 0) {
    if (query[0] >= 0) p.merge.lse[query[0]] = lse[0];
    if (query[1] >= 0) p.merge.lse[query[1]] = lse[1];
  }
}

// Whether each of the warp's rows is its query's only partial row (or past the item's rows).
__device__ __forceinline__ bool all_direct(const RowOutput& out0, const RowOutput& out1) {
  return __all_sync(0xffffffffu, (out0.row < 0 || out0.direct) && (out1.row < 0 || out1.direct));
}

// Store step where a row block's parts run as one cluster and share its rows (rule part_merge): each
// consumer warp leaves its two rows per lane (normalized) and their LSEs in its block's K and V stages,
// which no product reads any more; then warp w of the 8 in block w * size / 8 of the cluster folds the
// other blocks' copies of its rows into its own (the core merge, in rank order from its own, both rows'
// loads from a block's shared memory issued together), folds the queries' leaf rows where the plan says
// (fold_leaves: the cluster's leaf warps wrote them before the first barrier) and stores them as
// store_direct_rows or row_output.cuh does. The last barrier keeps every block's shared memory until the
// others have read it.
template <typename T, int D, int KT>
__device__ __forceinline__ void combine_cluster_rows(const SegmentAttentionParams& p, const float (&acc)[D / 2],
                                                     const float (&inv)[2], float (&lse)[2], const RowOutput& out0,
                                                     const RowOutput& out1, int wg, WgmmaSharedStorage<D, KT>& smem) {
  constexpr int N = D / 4, N4 = N / 4;  // a lane's values of a row, and their float4s
  static_assert(sizeof(smem.k) >= kWgmmaConsumerThreads * 2 * N * sizeof(float), "the rows fit the K stages");
  static_assert(sizeof(smem.v) >= kWgmmaConsumerThreads * 2 * sizeof(float), "the LSEs fit the V stages");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;  // warp: 0-7, both consumer warpgroups
  float rows[2][N];
#pragma unroll
  for (int r = 0; r < 2; ++r) fragment_row<D>(acc, r, inv[r], rows[r]);
  float4* const exchange = reinterpret_cast<float4*>(smem.k);  // [8 warps][2 rows][N4][32 lanes]
  float* const exchange_lse = reinterpret_cast<float*>(smem.v);  // [8 warps][2 rows][32 lanes]
  auto at = [&](int r, int j) { return ((warp * 2 + r) * N4 + j) * 32 + lane; };
  consumer_sync(WgmmaBarrier::stages_done);  // both warpgroups' last products have landed
#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int j = 0; j < N4; ++j) {
      exchange[at(r, j)] = make_float4(rows[r][4 * j], rows[r][4 * j + 1], rows[r][4 * j + 2], rows[r][4 * j + 3]);
    }
    exchange_lse[(warp * 2 + r) * 32 + lane] = lse[r];
  }
  cluster_sync();
  const unsigned size = cluster_size(), rank = cluster_rank();
  if (warp * size / 8 == rank) {
    for (unsigned step = 1; step < size; ++step) {  // the others in rank order from this one: both rows' loads at once
      const unsigned k = (rank + step) % size;
      float part[2][N], part_lse[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int j = 0; j < N4; ++j) {
          const float4 v = load_cluster_float4(cluster_address(smem_address(&exchange[at(r, j)]), k));
          part[r][4 * j] = v.x, part[r][4 * j + 1] = v.y, part[r][4 * j + 2] = v.z, part[r][4 * j + 3] = v.w;
        }
        part_lse[r] = load_cluster_float(cluster_address(smem_address(&exchange_lse[(warp * 2 + r) * 32 + lane]), k));
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) merge_into(rows[r], lse[r], part[r], part_lse[r], N);
    }
    const FragmentColumns columns{lane % 4};
    if (p.merge.fold_wide_rows) {  // the queries' leaf rows, which the cluster's leaf warps wrote before the barrier
      if (out0.fold) fold_wide_rows<D>(p.merge, out0, rows[0], lse[0], columns);
      if (out1.fold) fold_wide_rows<D>(p.merge, out1, rows[1], lse[1], columns);
    }
    auto done = [](const RowOutput& out) { return out.row < 0 || out.direct || out.fold; };  // O and LSE are final
    if (__all_sync(0xffffffffu, done(out0) && done(out1))) {
      store_direct_rows<T, D, KT>(p, [&](int r, float (&v)[N]) {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = rows[r][i];
      }, lse, out0, out1, wg, smem);
    } else {
      finish_row<T, D>(p, out0, rows[0], lse[0], columns);
      finish_row<T, D>(p, out1, rows[1], lse[1], columns);
    }
  }
  cluster_sync_relaxed();
}

// One item of `tiles` tiles, for the consumer warpgroup `wg`: load Q, every tile, store the rows.
// CLUSTER: the item is one part of a row block whose parts are this block's cluster (combine_cluster_rows).
template <typename T, int D, int KT, bool CLUSTER>
__device__ __forceinline__ void consume_item(const SegmentAttentionParams& p, const WorkItem& item, int used, int tiles,
                                             int wg, WgmmaSharedStorage<D, KT>& smem) {
  load_q<T, D, KT>(p, item, smem);
  // This lane's rows within the block, and the positions of the token list each sees.
  const int warp = threadIdx.x / 32 % 4, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int r0 = wg * 64 + warp * 16 + g, r1 = r0 + 8;
  const bool has0 = r0 < item.num_rows, has1 = r1 < item.num_rows;
  const int limit[2] = {has0 ? min(visible_limit(p, item.first_row + r0), item.token_end) : 0,
                        has1 ? min(visible_limit(p, item.first_row + r1), item.token_end) : 0};
  const RowOutput out0 = row_output(p, has0 ? item.first_row + r0 : -1);
  const RowOutput out1 = row_output(p, has1 ? item.first_row + r1 : -1);
  cp_async_wait<0>();
  fence_proxy_async();
  consumer_sync(WgmmaBarrier::q_ready);
  if (wg == 1) consumer_arrive(WgmmaBarrier::turn0);  // warpgroup 0 goes first

  RowPairSoftmax<KT / 8> softmax;
  float o[D / 2] = {};  // O: 8-column fragments, wgmma accumulator layout
  consume_kv_tiles<T, D, KT>(smem, item, used, tiles, wg, limit, p.scale_log2, softmax, o);

  float inv[2], lse[2];
  softmax.finish(inv, lse);
  if constexpr (CLUSTER) {
    combine_cluster_rows<T, D, KT>(p, o, inv, lse, out0, out1, wg, smem);
  } else if (all_direct(out0, out1)) {
    store_direct_rows<T, D, KT>(p, [&](int r, float (&v)[D / 4]) { fragment_row<D>(o, r, inv[r], v); }, lse, out0, out1,
                                wg, smem);
  } else {  // rows for the workspace: fp32, as the other kernels write them
    finish_row_pair<T, D>(p, o, 0, out0, inv[0], lse[0], t);
    finish_row_pair<T, D>(p, o, 1, out1, inv[1], lse[1], t);
  }
}

// A block per item, or a persistent block over its run of items (worker_items.cuh): the producer
// streams the run's tiles without a break, so the next item's first tiles load while the consumers
// store the last item's rows. CLUSTER: a block per item, launched in clusters of a row block's parts
// (rule part_merge), which combine their rows before storing them; every thread takes part in the
// cluster's two barriers (combine_cluster_rows).
template <typename T, int D, int KT, bool LEAVES, bool CLUSTER>
__global__ void __launch_bounds__(WgmmaTile<D, KT>::kThreads, 1) segment_attention_wgmma(const SegmentAttentionParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  allow_dependents();  // the merge may start once every block has (dependent_launch.cuh)
  using Tile = WgmmaTile<D, KT, LEAVES>;
  extern __shared__ unsigned char smem_raw[];
  auto& smem = *reinterpret_cast<WgmmaSharedStorage<D, KT>*>(align_shared<1024>(smem_raw));

  const ItemRange range = worker_items(p, blockIdx.x, gridDim.x);
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < Tile::kStages; ++stage) {
      mbarrier_init(smem_address(&smem.full_k[stage]), 1);
      mbarrier_init(smem_address(&smem.full_v[stage]), 1);
      mbarrier_init(smem_address(&smem.empty_k[stage]), 8);
      mbarrier_init(smem_address(&smem.empty_v[stage]), 8);
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the producer leaves the consumers' path here

  // The warpgroup index through a shuffle, so the compiler sees a warp-uniform value: a branch on
  // threadIdx.x looks divergent to it, and ptxas then serializes every wgmma after that branch
  // (C7520: each one waited for before the next issues).
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (wg == 2) {
    setmaxnreg_dec<Tile::kProducerRegisters>();
    if (threadIdx.x == Tile::kConsumerThreads) {
      for (int i = range.first, used = 0; i <= range.last; ++i) {
        const WorkItem item = p.items[i];
        const int tiles = item_tiles<KT>(item);
        produce_kv_tiles<D, KT>(p, item, used, tiles, smem);
        used += tiles;
      }
    }
    if constexpr (LEAVES) {
      const int leaf_warp = threadIdx.x / 32 % 4 - 1;  // the producer's warp 0 issues the loads
      if (leaf_warp >= 0) {
        SegmentAttentionParams leaves = p;
        leaves.items = p.leaf_items;
        leaves.num_items = p.num_leaf_items;
        leaves.worker_items = nullptr;
        leaves.merge.fold_wide_rows = false;  // a leaf's row goes to the workspace: its cluster folds it
        int worker = blockIdx.x * kWgmmaLeafWarps + leaf_warp, workers = gridDim.x * kWgmmaLeafWarps;
        if constexpr (CLUSTER) {
          if (p.cluster_leaf_items != nullptr) {  // the cluster's own leaves, before its combine reads their rows
            const unsigned size = cluster_size(), cluster = blockIdx.x / size;
            leaves.items = p.leaf_items + p.cluster_leaf_items[cluster];
            leaves.num_items = p.cluster_leaf_items[cluster + 1] - p.cluster_leaf_items[cluster];
            worker = cluster_rank() * kWgmmaLeafWarps + leaf_warp;
            workers = size * kWgmmaLeafWarps;
          }
        }
        run_mma_worker<T, D, 1, 1, kWgmmaLeafWarps, NarrowProduct::tokens>(leaves, leaf_warp, worker, workers,
                                                                            reinterpret_cast<unsigned char*>(&smem + 1));
      }
    }
    if constexpr (CLUSTER) {
      cluster_sync();          // the consumers' rows are in every block's stages
      cluster_sync_relaxed();  // and have been read
    }
    return;
  }

  setmaxnreg_inc<Tile::kConsumerRegisters>();
  for (int i = range.first, used = 0; i <= range.last; ++i) {
    const WorkItem item = p.items[i];
    // Both warpgroups' products that read the last item's Q have landed before it is overwritten.
    if (i > range.first) consumer_sync(WgmmaBarrier::q_ready);
    const int tiles = item_tiles<KT>(item);
    consume_item<T, D, KT, CLUSTER>(p, item, used, tiles, wg, smem);
    used += tiles;
  }
#else
  __trap();  // built without sm_90a: the host never selects this kernel (wide_kernel)
#endif
}

}  // namespace hydragen::cuda
