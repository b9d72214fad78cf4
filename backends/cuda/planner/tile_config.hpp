#pragma once
// Block shapes and tile sizes of the segment-attention and merge kernels: the one place both the
// kernels and the host (schedule, plans, launch) read them. Plain C++, no CUDA headers.
// Why each number is what it is: docs/kernel-notes.md (the entry named beside it).

namespace hydragen::cuda {

// The kernels a launch of segment-attention items can run, named for what they are. The vocabulary
// (docs/design.md): narrow items have at most 16 rows (one mma.sync fragment's), wide items more; the
// first four kernels run narrow items, the last two wide ones.
enum class ItemKernel {
  simt,           // fp32: 1 row warp x 4 token warps on CUDA cores
  token_warps,    // 1 row warp x 4 token warps sharing each item's tiles (mma.sync, 16-bit storage)
  item_warps,     // a warp per item, four items to a block (mma.sync, 16-bit storage)
  sm_item_warps,  // a warp per item, an SM's twelve warps to a block, one block per SM: leaves on SMs of
                  // their own beside a wgmma launch, which keeps the others whole
  mma64,          // <= 64 rows: 4 row warps (mma.sync, sm_80+)
  wgmma,          // <= 128 rows: 2 consumer warpgroups + 1 producer (wgmma and TMA, sm_90a)
};

// How a warp kernel's mma.sync m16n8k16 products lay out a narrow item (item_warps, sm_item_warps):
// rows, the item's rows on the product's 16-row side (S = Q K^T, O = P V); tokens, 16 tokens of a tile
// on that side and at most kTokenProductRows item rows on its 8 columns (S^T = K Q^T, O^T = V^T P^T),
// so that an item of few rows (a decode leaf: g rows) carries O in a quarter of the warp's registers
// per row instead of sixteen rows' worth, and its products, rescale and store in half the
// instructions (kernel-notes: token-product).
enum class NarrowProduct { rows, tokens };
inline constexpr int kTokenProductRows = 8;
// Rule narrow_product's auto takes the token product for items of at most this many rows: at 8 rows
// (MQA g = 8) it ran 0.92x-1.04x of the rows product beside a wgmma launch, at 1 and 4 rows 0.96x-1.00x
// (perf-notes v33).
inline constexpr int kTokenProductAutoRows = 4;

inline constexpr int kNarrowRows = 16;  // one warp's mma.sync fragment rows
inline constexpr int kMma64Rows = 64;   // four row warps
inline constexpr int kWgmmaRows = 128;  // two warpgroups of 64

// mma.sync kernels (narrow and wide): 128 threads, two stages of 64-token K and V tiles. Three
// blocks per SM: registers are capped for it (__launch_bounds__), and two stages at D = 128 (70 KB)
// fit three times in 227 KB; two per SM left the 64-row tiles latency-bound
// (kernel-notes: three-blocks-per-sm).
inline constexpr int kMmaThreads = 128;
inline constexpr int kMmaTokens = 64;
inline constexpr int kMmaBlocksPerSm = 3;

// Items per block of the warp kernel: four warps, each its own item, so a short item's chain of
// latencies (its tables, Q, the first tile) runs four at a time per block, where a narrow block's
// four token warps wait on each other at every tile (kernel-notes: item-warps).
inline constexpr int kItemWarps = 4;
// Items per block of the whole-SM warp kernel: the warps of kMmaBlocksPerSm warp blocks in one block,
// so that the block scheduler cannot spread them over SMs a wgmma block needs whole (a wgmma block's
// registers leave no room beside it).
inline constexpr int kSmWarps = kItemWarps * kMmaBlocksPerSm;

// Threads of an mma.sync block of ROW_WARPS x TOKEN_WARPS warps per worker and GROUPS workers:
// kMmaThreads, or an SM's worth (ItemKernel::sm_item_warps), and the blocks each SM holds at once.
template <int ROW_WARPS, int TOKEN_WARPS, int GROUPS>
struct MmaBlockShape {
  static constexpr int kThreads = 32 * ROW_WARPS * TOKEN_WARPS * GROUPS;
  static constexpr int kBlocksPerSm = kMmaThreads * kMmaBlocksPerSm / kThreads;
  static_assert(kThreads == kMmaThreads || kThreads == kMmaThreads * kMmaBlocksPerSm, "four warps, or an SM's twelve");
};

// A tile's rows. Narrow blocks stream K/V: D values with no padding, their 16-byte chunks swizzled,
// the tiles 128-byte aligned, so that cp.async fetches each 128-byte line from L2 once; padded rows
// fetched 1.5x the bytes and left cuda-flash over shared storage L2-bound
// (kernel-notes: swizzled-tiles). Wide blocks are bound by the tensor cores: padded rows (D + 8),
// whose affine addresses need fewer registers (with the swizzle's per-lane offsets they spilled more
// and ran 5-10% slower).
// GROUPS: independent groups of warps in a block (the warp kernels' one-warp workers), each with its
// own two stages of a quarter of a block's tokens.
template <int D, bool SWIZZLED, int GROUPS>
struct MmaTile {
  static constexpr bool kSwizzled = SWIZZLED;
  static constexpr int kTokens = GROUPS == 1 ? kMmaTokens : kMmaTokens / kItemWarps;
  static constexpr int kRowElements = SWIZZLED ? D : D + 8;  // +16 bytes keeps ldmatrix conflict-free
  static constexpr int kChunks = D / 8;                      // 16-byte chunks per row
  static constexpr int kStageBytes = 2 * kTokens * kRowElements * 2;  // a K and a V tile of 16-bit values
  static constexpr int kSmemBytes = GROUPS * 2 * kStageBytes + (SWIZZLED ? 128 - 16 : 0);  // + room to align swizzled tiles
};

// The tile of a block of ROW_WARPS row warps: swizzled for narrow and warp blocks (one row warp),
// padded for wide ones. The kernel and its launch both read it here.
template <int D, int ROW_WARPS, int GROUPS>
using MmaBlockTile = MmaTile<D, ROW_WARPS == 1, GROUPS>;

// wgmma kernel: 128 rows over KT-token tiles, one block per SM (kernel-notes: wgmma-blocks). KT is
// chosen per launch (rule wide_tile): 128, or 192 (FlashInfer's FA3 tile at D = 128) for long items,
// which amortizes each turn's hand-off over 1.5x the work; a short split part is fewer, longer
// tiles, a longer chain of latencies on a nearly idle GPU (kernel-notes: wgmma-tiles).
inline constexpr int kWgmmaTileTokens[] = {128, 192};
// The TMA box of a K/V load, in tokens: a tile is KT / 64 boxes, so the tensor maps serve every KT.
inline constexpr int kWgmmaBoxTokens = 64;
inline constexpr int kWgmmaConsumerThreads = 256;  // two warpgroups of 64 rows
// Two stages: a third (it fits at D = 128, KT = 128) ran the longest prefixes no faster and short
// split parts up to 4% slower (the refill's latency was hidden once O's rescale left the critical
// path; kernel-notes: wgmma-tiles).
inline constexpr int kWgmmaStages = 2;

// Leaf warps inside the wgmma blocks (LaunchRecipe::leaves_inside): the producer warpgroup's warps
// beside the one whose thread issues the TMA loads run narrow items as warp workers (the token
// product), each with its own two stages, so that the leaves' bytes stream on the SMs whose tensor
// cores the consumers keep busy (kernel-notes: leaf-warps-inside).
inline constexpr int kWgmmaLeafWarps = 3;
// The wgmma launch's cluster sizes (rule part_merge): a row block's parts, within the portable limit of 8.
inline constexpr int kClusterParts[] = {2, 4, 8};

template <int D, int KT, bool LEAVES = false>
struct WgmmaTile {
  static_assert(KT % kWgmmaBoxTokens == 0 && KT % 16 == 0, "a tile is whole TMA boxes and wgmma k-steps");
  static_assert(!LEAVES || KT == 128, "leaf warps fit beside 128-token tiles only (shared memory, registers)");
  static constexpr int kRows = kWgmmaRows;
  static constexpr int kTokens = KT;  // the N of S = Q K^T
  static constexpr int kConsumerThreads = kWgmmaConsumerThreads;
  static constexpr int kThreads = kConsumerThreads + 128;  // + the producer warpgroup (one thread issues)
  // Registers are allocated per warpgroup: 65536 / 384 = 168 each by default; the producer gives
  // most of its share to the consumers (setmaxnreg), which hold S, O and P (KT / 2 + D / 2 + KT / 4
  // live values: 160 at KT = 128, 208 at 192). With leaf warps the producer warpgroup keeps 120 for
  // them and the consumers take 192, the fewest without spills at KT = 128 (184 spilled 52 bytes):
  // 2 x 128 x 192 + 128 x 120 is the block's 384 x 168. The leaf warps' token product (126 registers
  // in the warp kernel) spills 64 bytes at 120.
  static constexpr int kProducerRegisters = LEAVES ? 120 : KT > 128 ? 24 : 40;
  static constexpr int kConsumerRegisters = LEAVES ? 192 : KT > 128 ? 240 : 232;
  static constexpr int kRowBytes = 128;             // one swizzled row: 64 16-bit values (a TMA box row)
  static constexpr int kQBytes = kRows * D * 2;     // [D / 64][kRows][128 B]
  static constexpr int kKvBytes = kTokens * D * 2;  // one K or V tile: [D / 64][kTokens][128 B]
  static constexpr int kStages = kWgmmaStages;
};

// The CUDA-core kernel for fp32 storage: narrow items, 32-token tiles.
inline constexpr int kSimtThreads = 128;
inline constexpr int kSimtTokens = 32;

// A work item's token list holds at most this many segments (ItemSegments' arrays); longer paths
// are cut into several items.
inline constexpr int kMaxItemSegments = 32;

// The merge kernel: one warp per query, or kMergeWarps for a query of more than kMergeSplitAbove
// partials (kernel-notes: merge-loads); each warp loads kMergeRound partial row ids at once, one per
// lane, so a split block of at most kMergeRound parts is folded in one round of loads.
inline constexpr int kMergeWarps = 4;
inline constexpr int kMergeSplitAbove = 8;
inline constexpr int kMergeRound = 32;

// A leaf row that does its query's merge (MergeParams::fold_wide_rows) loads and folds the wide
// launch's rows of its query one after another, and a lane of the rows product in a narrow item of
// more than 8 rows holds two rows: at most this many such rounds per lane. Beyond, the merge kernel,
// a warp per query all loads at once, was faster (four rows for each of two rows, 1.12x slower;
// kernel-notes: leaf-fold).
inline constexpr int kFoldRounds = 4;
// token_warps' leaves (a row a lane) also come in a kernel whose fold takes up to this many rows, for
// queries whose prefix is split in 5-8 parts: beside kFoldRounds' kernels, not instead of them, whose
// unrolled fold it would lengthen (every folding point 1.04x slower at 8, perf-notes v48).
inline constexpr int kLongFoldRounds = 8;

// cuda-hydragen-cublas: one block of kSoftmaxThreads holds a chunk's score row in registers,
// kSoftmaxPerThread scores each, so a GEMM chunk has at most kMaxChunkTokens tokens.
inline constexpr int kSoftmaxThreads = 256;
inline constexpr int kSoftmaxPerThread = 64;
inline constexpr int kMaxChunkTokens = kSoftmaxThreads * kSoftmaxPerThread;

constexpr int max_rows(ItemKernel kernel) {
  return kernel == ItemKernel::mma64 ? kMma64Rows : kernel == ItemKernel::wgmma ? kWgmmaRows : kNarrowRows;
}

constexpr int blocks_per_sm(ItemKernel kernel) {
  return kernel == ItemKernel::wgmma || kernel == ItemKernel::sm_item_warps ? 1 : kMmaBlocksPerSm;
}

// Items a block runs at once: its workers (worker_items in segment_attention_mma.cuh).
constexpr int items_per_block(ItemKernel kernel) {
  return kernel == ItemKernel::item_warps ? kItemWarps : kernel == ItemKernel::sm_item_warps ? kSmWarps : 1;
}

// The blocks a launch of `workers` workers takes.
constexpr int launch_blocks(int workers, ItemKernel kernel) {
  return (workers + items_per_block(kernel) - 1) / items_per_block(kernel);
}

}  // namespace hydragen::cuda
