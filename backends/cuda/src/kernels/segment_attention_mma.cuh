#pragma once
// Segment attention on the tensor cores with mma.sync m16n8k16 (fp16/bf16, sm_80+; the structure of
// FlashAttention-2). A block is GROUPS workers of ROW_WARPS x TOKEN_WARPS warps: row warp rw owns
// rows 16rw..16rw+15 of the worker's item, its Q fragments in registers for the whole item; token
// warp tw takes its share of every K/V tile (64 tokens, or 16 for a warp worker). Wide items (64
// stacked query rows of a shared segment): 4 row warps x 1 token warp. Narrow items (<= 16 rows, one
// sequence's decode): 1 row warp x 4 token warps, so a block still has four warps to hide latency
// while it streams a long path; or, for short ones, four one-warp workers (ItemKernel::item_warps), so
// that four items' latencies overlap instead of four warps waiting on each other at every tile;
// or twelve such warps, a whole SM's (ItemKernel::sm_item_warps), for leaves on SMs of their own.
// A warp worker's products lay out its item by rows (16 rows x 8 tokens per product) or, for items of
// at most 8 rows, by tokens (16 tokens x the item's rows: NarrowProduct::tokens).
//
// The kernel's steps, each a function below:
//   scheduler  worker_items (worker_items.cuh): the worker's run of items (one, or many for persistent workers)
//   load       load_kv_tile (cp.async, two stages), load_q_fragments
//   compute    attend_tile: S = Q K^T (fp32), causal/length mask, online softmax in exp2, O += P V;
//              attend_tile_tokens: the same as S^T = K Q^T and O^T += V^T P^T
//   fold       fold_token_warps: the token warps' states combined with the core merge
//   store      row_output.cuh
//
// Persistent workers (the planner's launch_workers rule, for many short items) take
// a contiguous run of items, an item's first tile loaded while the previous item's last one is
// computed, and pull their items' tables into L1 first (kernel-notes: persistent-workers).
#include <type_traits>

#include "dependent_launch.cuh"
#include "hydragen/cuda/element.cuh"
#include "hydragen/merge.hpp"
#include "item_segments.cuh"
#include "leaf_length.cuh"
#include "mma.cuh"
#include "online_softmax.cuh"
#include "params.hpp"
#include "row_output.cuh"
#include "tile_config.hpp"
#include "tile_copies.hpp"
#include "worker_items.cuh"

namespace hydragen::cuda {

// The dynamic shared memory: two stages, each a K and a V tile.
template <typename T, typename Tile>
struct MmaSharedStorage {
  T kv[2][2][Tile::kTokens][Tile::kRowElements];  // [stage][K, V][token][column: tile_offset]
};

// Pulls the tables of a worker's items a..b into L1, so the loads that find the next item's tokens
// and queries do not wait on DRAM behind the K/V stream.
template <int THREADS>
__device__ __forceinline__ void prefetch_item_tables(const SegmentAttentionParams& p, const ItemRange& range,
                                                     const WorkItem& a, const WorkItem& b, int thread) {
  prefetch_range_l1<THREADS>(p.items + range.first, (range.last - range.first + 1) * static_cast<long long>(sizeof(WorkItem)), thread);
  prefetch_range_l1<THREADS>(p.item_segments + a.first_segment, 4LL * (b.first_segment + b.num_segments - a.first_segment), thread);
  // The rows of the worker's items, unless other items' rows lie between (narrow and wide items
  // number their rows in one sequence).
  if (b.first_row >= a.first_row && b.first_row + b.num_rows - a.first_row <= 4096) {
    for (const int* table : {p.row_query, p.row_limit, p.row_leaf}) {
      prefetch_range_l1<THREADS>(table + a.first_row, 4LL * (b.first_row + b.num_rows - a.first_row), thread);
    }
  }
}

// The threads of one worker wait for each other: the block's, or the warp's.
template <int THREADS>
__device__ __forceinline__ void worker_sync() {
  static_assert(THREADS == kMmaThreads || THREADS == 32, "a worker is a four-warp block or one warp");
  if constexpr (THREADS == kMmaThreads) {
    __syncthreads();
  } else {
    __syncwarp();
  }
}

// Load step: issues the copies of tile `tile` of `item` into (k_dst, v_dst) and commits them;
// positions past token_end become zeros. Each thread copies the chunks TileCopies gives it.
template <typename T, int D, typename Tile, int THREADS>
__device__ __forceinline__ void load_kv_tile(const SegmentAttentionParams& p, const WorkItem& item,
                                             const ItemSegments<T>& seg, int tile, int thread, T* k_dst, T* v_dst) {
  constexpr int KT = Tile::kTokens;
  using Copies = TileCopies<THREADS, Tile>;
  const int p0 = item.token_begin + tile * KT;
  const unsigned long long policy = p.leaf_evict_first ? kL2EvictFirst : kL2EvictNormal;
  const int first = seg.find(p0);
  if (p0 + KT <= item.token_end && p0 + KT <= seg.start[first + 1]) {
    // The common case: the whole tile lies in one segment, rows a fixed stride apart. The sources are
    // taken out of shared memory once: read inside the loop, every copy reloaded them
    // (kernel-notes: copy-sources-once). They are counted in 16-byte chunks from the segment's start,
    // in 32 bits (cuda_supports refuses a segment of 2^31 chunks), so that each row's address is one
    // multiply-add and its chunks constant offsets from it (kernel-notes: copy-addresses).
    const Copies copies(thread);
    const int row_chunks = p.kv_heads * Tile::kChunks;
    const int first_chunk = ((p0 - seg.start[first] + copies.row(0)) * p.kv_heads + item.kv_head) * Tile::kChunks + copies.chunk(0);
    const uint4* k_src = static_cast<const uint4*>(static_cast<const void*>(seg.k[first]));
    const uint4* v_src = static_cast<const uint4*>(static_cast<const void*>(seg.v[first]));
#pragma unroll
    for (int j = 0; j < Copies::kRows; ++j) {
      const int at = first_chunk + 8 * Copies::kRowGroups * j * row_chunks;
      const uint4* k_row = k_src + at;
      const uint4* v_row = v_src + at;
#pragma unroll
      for (int k = 0; k < Copies::kColumns; ++k) {
        const int to = copies.destination(j, k);
        cp_async_16(k_dst + to, k_row + Copies::kColumnLanes * k, policy);
        cp_async_16(v_dst + to, v_row + Copies::kColumnLanes * k, policy);
      }
    }
  } else {
    // A tile across a segment boundary or past the item's end: locate every row.
    for (int c = thread; c < KT * Tile::kChunks; c += THREADS) {
      const int row = c / Tile::kChunks, column = c % Tile::kChunks * 8;
      const int pos = p0 + row;
      const T* k_src = static_cast<const T*>(p.q);  // any valid address: nothing is read when the size is 0
      const T* v_src = k_src;
      int bytes = 0;
      if (pos < item.token_end) {
        const int i = seg.find(pos);
        const long long off = seg.offset(i, pos, p.kv_heads, item.kv_head, D, column);
        k_src = seg.k[i] + off;
        v_src = seg.v[i] + off;
        bytes = 16;
      }
      cp_async_16(k_dst + tile_offset<Tile>(row, column), k_src, bytes, policy);
      cp_async_16(v_dst + tile_offset<Tile>(row, column), v_src, bytes, policy);
    }
  }
  cp_async_commit();
}

// The lane's two fragment rows of an item (g and g + 8 of its row warp's 16; 2t and 2t + 1 in the
// token product): whether they exist, and the positions of the item's token list each sees.
struct LaneRows {
  int row[2];   // within the item
  bool has[2];
  int limit[2];  // its causal limit, cut at the item's end

  // A row past num_rows (most decode blocks: q_len g < 16 rows) has a zero query, so scores of 0:
  // it gets the item's end as its limit, so that it neither masks every tile nor, its max never
  // moving, makes the warp rescale O on every tile (kernel-notes: padding-row-limit). It is never stored.
  __device__ __forceinline__ LaneRows(const SegmentAttentionParams& p, const WorkItem& item, int r0, int step) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row[r] = r0 + step * r;
      has[r] = row[r] < item.num_rows;
      limit[r] = has[r] ? min(visible_limit(p, item.first_row + row[r]), item.token_end) : item.token_end;
    }
  }
};

// Load step: the A fragments of Q for the lane's two rows, one per 16 columns (zeros past num_rows).
template <typename T, int D>
__device__ __forceinline__ void load_q_fragments(const SegmentAttentionParams& p, const WorkItem& item,
                                                 const LaneRows& rows, int t, unsigned (&qa)[D / 16][4]) {
  const T* q[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    q[r] = rows.has[r] ? static_cast<const T*>(p.q) + static_cast<long long>(p.row_query[item.first_row + rows.row[r]]) * D
                       : nullptr;
  }
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = 16 * ks + 2 * t;
    qa[ks][0] = rows.has[0] ? *reinterpret_cast<const unsigned*>(q[0] + c) : 0u;
    qa[ks][1] = rows.has[1] ? *reinterpret_cast<const unsigned*>(q[1] + c) : 0u;
    qa[ks][2] = rows.has[0] ? *reinterpret_cast<const unsigned*>(q[0] + c + 8) : 0u;
    qa[ks][3] = rows.has[1] ? *reinterpret_cast<const unsigned*>(q[1] + c + 8) : 0u;
  }
}

// Load step, token product: the B fragments of Q^T, row g of the item (zeros past num_rows): [ks][0]
// columns 16 ks + 2t and + 1, [ks][1] 8 further.
template <typename T, int D>
__device__ __forceinline__ void load_q_columns(const SegmentAttentionParams& p, const WorkItem& item, int g,
                                               unsigned (&qb)[D / 16][2]) {
  const int t = threadIdx.x % 4;
  const T* q = g < item.num_rows ? static_cast<const T*>(p.q) + static_cast<long long>(p.row_query[item.first_row + g]) * D
                                 : nullptr;  // [D]: the row's query
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = 16 * ks + 2 * t;
    qb[ks][0] = q != nullptr ? *reinterpret_cast<const unsigned*>(q + c) : 0u;
    qb[ks][1] = q != nullptr ? *reinterpret_cast<const unsigned*>(q + c + 8) : 0u;
  }
}

// Compute step, token product: a warp's 16-token tile (its first position pos0) against its item's
// rows: S^T = K Q^T (K as the A operand, 16 tokens x 16 columns a product), the online softmax over
// each row's tokens, P^T turned into B fragments (movmatrix), O^T += V^T P^T (V read transposed, 16
// columns of O a product). Half the products of attend_tile, and O^T in D / 4 values a lane.
// k_tile, v_tile: [16 tokens][D] in the tile's layout (tile_offset).
template <typename T, int D, typename Tile>
__device__ __forceinline__ void attend_tile_tokens(const unsigned (&qb)[D / 16][2], const T* k_tile, const T* v_tile,
                                                   int pos0, const int (&limit)[2], float scale_log2, bool mask,
                                                   TokenRowSoftmax& softmax, float (&acc)[D / 4]) {
  static_assert(Tile::kTokens == 16, "the token product takes a tile's 16 tokens at once");
  const int lane = threadIdx.x % 32, g = lane / 4, m = lane / 8;  // m: the 8x8 matrix whose row this lane addresses
  float s[4] = {};
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {  // A: tokens 0-7 and 8-15 of columns 16 ks.., then of 16 ks + 8..
    unsigned a[4];
    ldmatrix_x4(a, k_tile + tile_offset<Tile>(lane % 8 + 8 * (m % 2), 16 * ks + 8 * (m / 2)));
    mma_16816<T>(s, a, qb[ks][0], qb[ks][1]);
  }
  float alpha[2];
  softmax.update(s, pos0 + g, limit, scale_log2, mask, alpha);
  softmax.rescale(acc, alpha);
  // [token][row] blocks (tokens g and g + 8, rows 2t, 2t + 1) to [row][token]: rows g of tokens 2t, 2t + 1.
  const unsigned pb0 = movmatrix_trans(pack2<T>(s[0], s[1])), pb1 = movmatrix_trans(pack2<T>(s[2], s[3]));
#pragma unroll
  for (int mt = 0; mt < D / 16; ++mt) {  // A = V^T: columns 16 mt.. and + 8 of tokens 0-7, then of 8-15
    unsigned a[4];
    ldmatrix_x4_trans(a, v_tile + tile_offset<Tile>(lane % 8 + 8 * (m / 2), 16 * mt + 8 * (m % 2)));
    mma_16816<T>(acc + 4 * mt, a, pb0, pb1);
  }
}

// Compute step: this warp's NT 8-token fragments of one tile (tokens tok0.. of k_tile and v_tile),
// whose first position in the item's token list is pos0: S = Q K^T, the online softmax, O += P V.
template <typename T, int D, typename Tile, int NT>
__device__ __forceinline__ void attend_tile(const unsigned (&qa)[D / 16][4], const T* k_tile, const T* v_tile, int tok0,
                                            int pos0, const int (&limit)[2], float scale_log2, bool mask,
                                            RowPairSoftmax<NT>& softmax, float (&acc)[D / 2]) {
  static_assert(NT % 2 == 0, "P V takes the tile's tokens 16 at a time");
  const int lane = threadIdx.x % 32, t = lane % 4;
  float s[4 * NT] = {};  // S: 8 tokens per fragment
#pragma unroll
  for (int ks = 0; ks < D / 16; ks += 2) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      unsigned b[4];
      ldmatrix_x4(b, k_tile + tile_offset<Tile>(tok0 + 8 * nt + lane % 8, 16 * ks + 8 * (lane / 8)));
      mma_16816<T>(s + 4 * nt, qa[ks], b[0], b[1]);
      mma_16816<T>(s + 4 * nt, qa[ks + 1], b[2], b[3]);
    }
  }
  float alpha[2];
  softmax.update(s, pos0 + 2 * t, limit, scale_log2, mask, alpha);
  softmax.rescale(acc, alpha);
  // O += P V: P's accumulator layout is already the A layout of the next product.
#pragma unroll
  for (int kc = 0; kc < NT / 2; ++kc) {
    unsigned pa[4];
    probabilities_as_a<T, NT>(s, kc, pa);
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      unsigned b[4];
      ldmatrix_x4_trans(b, v_tile + tile_offset<Tile>(tok0 + 16 * kc + lane % 8 + (lane / 8 & 1) * 8, 16 * np + (lane / 16) * 8));
      mma_16816<T>(acc + 8 * np, pa, b[0], b[1]);
      mma_16816<T>(acc + 8 * np + 4, pa, b[2], b[3]);
    }
  }
}

// Fold step: each token warp saw its share of every tile; their states, written to `scratch` (a
// stage the next tile does not need), are folded in token-warp order by the core merge, as the merge
// kernel folds partial rows, GROUP lanes per row; then the store step (a leaf row folding at most
// FOLD_ROUNDS wide rows).
template <typename T, int D, typename Tile, int ROWS, int TOKEN_WARPS, int FOLD_ROUNDS>
__device__ __forceinline__ void fold_token_warps(const SegmentAttentionParams& p, const WorkItem& item,
                                                 const LaneRows& rows, const float (&acc)[D / 2], const float (&inv)[2],
                                                 const float (&row_lse)[2], const RowOutput& out, float* scratch) {
  constexpr int GROUP = kMmaThreads / ROWS;
  float* const o_states = scratch;                         // [TOKEN_WARPS][ROWS][D]
  __shared__ float lse_states[TOKEN_WARPS * ROWS];         // [TOKEN_WARPS][ROWS]
  static_assert(TOKEN_WARPS * ROWS * D * 4 <= Tile::kStageBytes, "the O states fit in one stage");
  const int token_warp = threadIdx.x / 32 % TOKEN_WARPS, t = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {  // this lane's two fragment rows, as fp32 states
    if (!rows.has[r]) continue;
    float o[D / 4];
    fragment_row<D>(acc, r, inv[r], o);
    store_values(o_states + (token_warp * ROWS + rows.row[r]) * D, o, FragmentColumns{t});
    if (t == 0) lse_states[token_warp * ROWS + rows.row[r]] = row_lse[r];
  }
  __syncthreads();
  // All rows at once: lane sub of a row holds columns sub + GROUP v.
  const int r = threadIdx.x / GROUP, sub = threadIdx.x % GROUP;
  float o[D / GROUP] = {};
  float lse = -INFINITY;
  if (r < item.num_rows) {
#pragma unroll
    for (int k = 0; k < TOKEN_WARPS; ++k) {
      float state[D / GROUP];
#pragma unroll
      for (int v = 0; v < D / GROUP; ++v) state[v] = o_states[(k * ROWS + r) * D + sub + GROUP * v];
      merge_into(o, lse, state, lse_states[k * ROWS + r], D / GROUP);
    }
  }
  __syncthreads();  // the next item's second tile goes into this stage
  finish_row<T, D, ROWS == 16 ? FOLD_ROUNDS : 0>(p, out, o, lse, StridedColumns<GROUP>{sub});
}

// One worker's run of items, the worker being `group` of the block's GROUPS (the block itself, or
// one of its warps), number `worker` of the launch's `workers`; smem_raw: the GROUPS workers' stages.
// The mma kernel runs one per block or warp; the wgmma kernel's leaf warps run warp workers
// (LaunchRecipe::leaves_inside). FOLD_ROUNDS: the most wide rows a leaf row folds (kFoldRounds, or
// kLongFoldRounds in token_warps' long-fold kernel).
template <typename T, int D, int ROW_WARPS, int TOKEN_WARPS, int GROUPS, NarrowProduct PRODUCT, int FOLD_ROUNDS = kFoldRounds>
__device__ __forceinline__ void run_mma_worker(const SegmentAttentionParams& p, int group, int worker, int workers,
                                               unsigned char* smem_raw) {
  static_assert(GROUPS == 1 || TOKEN_WARPS == 1, "the fold of token warps is block-wide");
  constexpr bool kTokenProduct = PRODUCT == NarrowProduct::tokens;
  static_assert(!kTokenProduct || (ROW_WARPS == 1 && TOKEN_WARPS == 1 && GROUPS > 1), "the token product is the warp kernels'");
  using Tile = MmaBlockTile<D, ROW_WARPS, GROUPS>;
  constexpr int KT = Tile::kTokens, ROWS = 16 * ROW_WARPS, THREADS = 32 * ROW_WARPS * TOKEN_WARPS;  // THREADS: a worker's
  constexpr int NT = KT / 8 / TOKEN_WARPS;  // 8-token fragments of a tile per warp
  const int thread = GROUPS == 1 ? threadIdx.x : threadIdx.x % THREADS;
  // Padded tiles need only the 16 bytes of a cp.async.
  auto& smem = reinterpret_cast<MmaSharedStorage<T, Tile>*>(Tile::kSwizzled ? align_shared<128>(smem_raw) : smem_raw)[group];
  // The item being computed and the next one (slot ^ 1), whose first tile is loaded meanwhile.
  __shared__ WorkItem group_items[GROUPS][2];
  __shared__ ItemSegments<T> group_segs[GROUPS][2];
  WorkItem* const items = group_items[group];
  ItemSegments<T>* const segs = group_segs[group];
  auto sync = [] { worker_sync<THREADS>(); };

  const int warp = thread / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row_warp = warp / TOKEN_WARPS, token_warp = warp % TOKEN_WARPS;
  const int tok0 = token_warp * (KT / TOKEN_WARPS);  // this warp's first token within a tile
  auto load_tile = [&](const WorkItem& item, int slot, int tile, int stage) {
    load_kv_tile<T, D, Tile, THREADS>(p, item, segs[slot], tile, thread, &smem.kv[stage][0][0][0], &smem.kv[stage][1][0][0]);
  };

  const ItemRange range = worker_items(p, worker, workers);
  auto end_worker = [&] {
    if (p.merge.chain_count != nullptr && thread == 0) end_after_primary(p.merge.chain_count, workers);
  };
  if (range.first > range.last) {  // a spare warp of the last block
    end_worker();
    return;
  }
  {
    const WorkItem a = p.items[range.first], b = p.items[range.last];
    prefetch_item_tables<THREADS>(p, range, a, b, thread);
    if (thread == 0) {
      items[0] = a;
      segs[0].fill(p, a);
    }
  }
  sync();
  int slot = 0, stage = 0;  // stage: where the current tile lands
  load_tile(items[0], 0, 0, 0);
  for (int index = range.first;; ++index) {
    const WorkItem item = items[slot];
    const LaneRows rows(p, item, kTokenProduct ? 2 * t : 16 * row_warp + g, kTokenProduct ? 1 : 8);
    // Where the rows go: this lane's fragment rows, or, when the token warps are folded first, row
    // threadIdx.x / GROUP of the folded states.
    RowOutput out[2];
    if constexpr (TOKEN_WARPS == 1) {
      out[0] = row_output(p, rows.has[0] ? item.first_row + rows.row[0] : -1);
      out[1] = row_output(p, rows.has[1] ? item.first_row + rows.row[1] : -1);
    } else {
      const int r = threadIdx.x / (kMmaThreads / ROWS);
      out[0] = row_output(p, r < item.num_rows ? item.first_row + r : -1);
    }
    // Q as A fragments (rows) or B fragments (tokens); O, or O^T, as 8-column or 16-column fragments.
    // After the first tile's copies: loaded before the segment lookups, its row ids held them up;
    // between them and the copies, it held up the tiles (kernel-notes: leaf-start-loads).
    unsigned qa[D / 16][kTokenProduct ? 2 : 4];
    if constexpr (kTokenProduct) {
      load_q_columns<T, D>(p, item, g, qa);
    } else {
      load_q_fragments<T, D>(p, item, rows, t, qa);
    }
    std::conditional_t<kTokenProduct, TokenRowSoftmax, RowPairSoftmax<NT>> softmax;
    float acc[kTokenProduct ? D / 4 : D / 2] = {};
    const int tiles = (item.token_end - item.token_begin + KT - 1) / KT;
    for (int it = 0; it < tiles; ++it) {
      // Load the tile after this one: the item's next, or the next item's first.
      const bool ahead = it + 1 < tiles || index < range.last;
      if (it + 1 < tiles) {
        load_tile(item, slot, it + 1, stage ^ 1);
      } else if (ahead) {
        if (thread == 0) {
          items[slot ^ 1] = p.items[index + 1];
          segs[slot ^ 1].fill(p, items[slot ^ 1]);
        }
        sync();
        load_tile(items[slot ^ 1], slot ^ 1, 0, stage ^ 1);
      }
      if (ahead) {
        cp_async_wait<1>();
      } else {
        // The worker's last tile: the merge may start once every block has reached its own
        // (dependent_launch.cuh; earlier was slower, kernel-notes: early-merge-launch).
        allow_dependents();
        cp_async_wait<0>();
      }
      sync();
      const int pos0 = item.token_begin + it * KT + tok0;
      const bool mask = pos0 + KT / TOKEN_WARPS > min(rows.limit[0], rows.limit[1]);
      if constexpr (kTokenProduct) {
        attend_tile_tokens<T, D, Tile>(qa, &smem.kv[stage][0][0][0], &smem.kv[stage][1][0][0], pos0, rows.limit,
                                       p.scale_log2, mask, softmax, acc);
      } else {
        attend_tile<T, D, Tile, NT>(qa, &smem.kv[stage][0][0][0], &smem.kv[stage][1][0][0], tok0, pos0, rows.limit,
                                    p.scale_log2, mask, softmax, acc);
      }
      sync();  // the next copies into this stage come after every warp is done with it
      stage ^= 1;
    }

    float inv[2], row_lse[2];
    softmax.finish(inv, row_lse);
    if constexpr (kTokenProduct) {
      finish_token_row<T, D>(p, acc, 0, out[0], inv[0], row_lse[0], g);
      finish_token_row<T, D>(p, acc, 1, out[1], inv[1], row_lse[1], g);
    } else if constexpr (TOKEN_WARPS == 1) {
      // Only narrow items (one row warp) are ever leaves that fold (MergeParams::fold_wide_rows).
      finish_row_pair<T, D, ROW_WARPS == 1 ? FOLD_ROUNDS : 0>(p, acc, 0, out[0], inv[0], row_lse[0], t);
      finish_row_pair<T, D, ROW_WARPS == 1 ? FOLD_ROUNDS : 0>(p, acc, 1, out[1], inv[1], row_lse[1], t);
    } else {
      // The stage the last tile left: the other one is receiving the next item's first tile.
      fold_token_warps<T, D, Tile, ROWS, TOKEN_WARPS, FOLD_ROUNDS>(p, item, rows, acc, inv, row_lse, out[0],
                                                reinterpret_cast<float*>(&smem.kv[stage ^ 1][0][0][0]));
    }
    if (index == range.last) break;
    slot ^= 1;
  }
  end_worker();
}

template <typename T, int D, int ROW_WARPS, int TOKEN_WARPS, int GROUPS, NarrowProduct PRODUCT = NarrowProduct::rows,
          int FOLD_ROUNDS = kFoldRounds>
__global__ void __launch_bounds__(MmaBlockShape<ROW_WARPS, TOKEN_WARPS, GROUPS>::kThreads,
                                  MmaBlockShape<ROW_WARPS, TOKEN_WARPS, GROUPS>::kBlocksPerSm)
    segment_attention_mma(const SegmentAttentionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // This thread's worker (the block, or one of its warps). A constant 0 for a one-worker block:
  // computed, it made every shared-memory address a register (the wide kernel 1.09x to 1.14x
  // slower, kernel-notes: constant-worker-index).
  const int group = GROUPS == 1 ? 0 : threadIdx.x / (32 * ROW_WARPS * TOKEN_WARPS);
  run_mma_worker<T, D, ROW_WARPS, TOKEN_WARPS, GROUPS, PRODUCT, FOLD_ROUNDS>(p, group, blockIdx.x * GROUPS + group,
                                                                             gridDim.x * GROUPS, smem_raw);
}

}  // namespace hydragen::cuda
