#pragma once
// Every rule that chooses how a cuda-flash, cuda-hydragen or cuda-hydragen-cublas plan runs: a pure
// function each, its inputs in, its choice and a Decision (the rule's name, its inputs, one line of
// why) out. The planner (planner.hpp) calls them in order and keeps their decisions; nothing else
// decides. docs/planner-rules.md has an entry per rule, under the name below, with the measurements
// behind its thresholds.
#include <optional>
#include <string>
#include <vector>

#include "decision.hpp"
#include "device_limits.hpp"
#include "device_rates.hpp"
#include "hydragen/dtype.hpp"
#include "hydragen/shape.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

template <typename T>
struct Ruled {
  T choice;
  Decision decision;
};

// ---- thresholds, named (docs/planner-rules.md: each rule's entry says where they were measured) ----
inline constexpr int kWgmmaWaves = 1;          // wide_target_blocks: a wave of wgmma blocks (one per SM)
// ... half a wave where a wave would cut parts of at most this many tokens with leaves after the launch
// of more than one row averaging at least kHalfWaveLeafTokens (without such leaves: of kMinSplitTokens,
// the shortest cut)
inline constexpr long long kHalfWaveLeafPartTokens = 512;
inline constexpr long long kHalfWaveLeafTokens = 16;
// ... fewer parts for leaves of more rows after the launch where their stream covers this share of a
// part's compute (the tuner's medians: 0.4-0.6 move only points that gain, 0.3 some that lose; perf-notes v61)
inline constexpr double kAfterLeavesCover = 0.5;
inline constexpr int kMmaWaves = 3;            // ... three of the latency-bound mma.sync blocks
// form: the 16-row form's longest item where its items are at most one per SM, and at most two
inline constexpr long long kNarrowFormItemTokens = 512;
inline constexpr long long kNarrowFormTwoWaveItemTokens = 256;
inline constexpr int kNarrowMaxWaves = 4;      // narrow_split: parts added up to this many waves
inline constexpr int kInlinePathsShare = 4;    // inline_paths: paths x KV heads at least SMs / this
inline constexpr int kPersistentItemsPerSlot = 8;  // persistent_workers: items per resident worker, at least
inline constexpr int kPersistentTilesPerItem = 2;  // ... and at most this many 64-token tiles per item
// narrow_kernel: a warp per item where items average at most these many 64-token tiles and ...
inline constexpr int kWarpsShortTiles = 1;     // ... number at least the SMs
inline constexpr int kWarpsQueuedTiles = 3;    // ... outnumber the resident blocks
inline constexpr int kWarpsSecondWaveTiles = 8;  // ... number one to two waves of blocks
inline constexpr int kWarpsAloneTiles = 18;    // ... alone on the GPU, number two to four waves of blocks
// fold_leaves: the SM time a folding leaf block may leave idle waiting for the wgmma launch.
inline constexpr long long kFoldForgoneSmTokens = 12 * 4096;
// leaf_layout: leaves beside the wgmma launch only where predicted faster than after by the device's
// margin (DeviceRates::beside_margin), with leaves of at most this many tokens on average (the longest
// measured), and at most this many parts per persistent wgmma block.
inline constexpr double kBesideMaxLeafTokens = 512;
// ... and never for leaves of one row (g x q_len = 1: MHA decoding) averaging fewer tokens than this, where
// the model misses the per-item cost (docs/planner-rules.md: leaf_layout, measured 2026-11-26).
inline constexpr double kBesideMinOneRowLeafTokens = 32;
inline constexpr int kMaxPartsPerWorker = 8;
// ... the leaves beside streaming at most as fast as this many of them to a leaf SM (an SM's rate needs
// about half its twelve warps: 64 leaves on 20 leaf SMs ran beside 1.40x after, 256 on 36 as fast as
// the SMs' rate predicts: perf-notes v54)
inline constexpr double kLeafWarpsFillingAnSm = 6;
// ... inside (leaves=auto): where the leaves' 16-token tiles per leaf warp of a wave of wgmma blocks are
// at most this share of the wgmma launch's 128-token tiles per SM (measured wins at 0.16-0.17, losses
// from 0.66: perf-notes v37), and a wave's parts longer than kHalfWaveLeafPartTokens (at 248 and 496
// tokens inside ran 1.15x-1.17x).
inline constexpr double kInsideLeafTileShare = 0.25;
// ... or at most this share where every leaf has kTokenProductRows rows and every wgmma row block is as
// long as the others (one shared segment, so the leaf warps' even deal meets even wgmma work): at shares
// 0.33-0.58 inside ran 0.82x-1.01x of after, at 0.67 0.91x-1.10x, and over trees (row blocks of two
// lengths) 1.02x-1.04x (perf-notes v41).
inline constexpr double kInsideFullLeafTileShare = 0.6;
// wide_tile: the 192-token tile where every wgmma item has at least this many tokens (on the H200 since
// v52's softmax, at one item per row block: 0.946x-0.988x of 128 over 3072-4000 tokens, 0.97x-1.02x at
// 2304-2816 by the last tile's waste, 1.014x at 2048; perf-notes v53).
inline constexpr long long kWideTileLongTokens = 3072;
// gemm_chunks: the most scores (KV heads x rows x tokens) of one cuBLAS chunk: 256 MiB of fp32
// scores and their probabilities beside them.
inline constexpr long long kMaxChunkScores = 1LL << 26;

// ---- the schedule ----

// Rule `device`: the device the plan is for, and the rates its cost models use: those it carries,
// else device-rates.csv's row for its name, else none (the rules that need rates abstain, and say so).
Ruled<std::optional<DeviceRates>> device_and_rates(const DeviceLimits& device);

// The kernel of items of more than 16 rows: wgmma where the device runs it, unless `mma_only`
// (wide_kernel=mma64, or cuda-flash's paths: wgmma items read one segment each); mma.sync otherwise; fp32
// has only CUDA-core narrow blocks.
Ruled<ItemKernel> wide_kernel(DType dtype, bool mma_only, bool flat_paths, const DeviceLimits& device);

// Whether segments of few readers (their stacked rows fit one narrow block) are read within each
// reader's path: where such paths x KV heads reach a quarter of the SMs. `option`: auto or never.
Ruled<bool> inline_paths(const std::string& option, long long narrow_paths, int kv_heads, const DeviceLimits& device);

// The wide launch's target: a wave of wgmma blocks, three of mma.sync ones. Given the census of
// cuda-hydragen's blocks (null where the launch's items are not yet cut), half a wave of wgmma blocks
// where a wave would cut parts of at most kHalfWaveLeafPartTokens with leaves after the launch (of
// more than one row, averaging kHalfWaveLeafTokens or more), or the shortest parts (kMinSplitTokens) without.
// Where the device has rates, the fewest parts per row block (1, 2, 4, ...) that keep the launch within
// half the SMs and a part's compute no longer than the leaves' stream at the DRAM rate: for one-row
// leaves where a wave would hold every SM; for leaves of more rows where rule leaf_layout has put them
// after the launch (`after_leaf_items`: their items' lengths after the narrow split, null otherwise) and
// those items would not all be resident on the SMs it leaves free.
Ruled<long long> wide_target_blocks(ItemKernel wide, const BlockCensus* census, const AttentionShape& shape,
                                    const std::optional<DeviceRates>& rates, const DeviceLimits& device,
                                    const std::vector<long long>* after_leaf_items = nullptr);
// wide_parts=N (N a number): N parts per wide row block, whatever the waves (`row_blocks`: the wide ones).
Ruled<long long> wide_parts_target(const std::string& option, long long row_blocks);

// Parts per narrow block: enough for a block per SM where they stream their own K/V, for a wave of
// the `narrow_slots` resident blocks otherwise, then more while the last wave would be under half
// full, up to four waves.
Ruled<long long> narrow_split(const BlockCensus& census, int narrow_slots, const DeviceLimits& device);

// cuda-hydragen's form=auto: one launch of 16-row blocks where the wide form (planned whole:
// `wide_recipe`, its leaves folding `wide_fold_rounds` rows where they fold) takes two launches joined,
// not folded, and the 16-row form's items (their tokens: `narrow_form_items`) are at most one per SM and
// kNarrowFormItemTokens long, or at most two per SM and kNarrowFormTwoWaveItemTokens long; or where the
// wide form's leaves fold more than kFoldRounds rows and the 16-row items are at most one per SM and that
// short; otherwise the wide form.
Ruled<bool> one_narrow_launch(LaunchRecipe wide_recipe, int wide_fold_rounds, const BlockCensus& narrow_form,
                              const std::vector<long long>& narrow_form_items,
                              const DeviceLimits& device);

// Where the leaves run beside a wgmma launch of the shared segments: after it (on the SMs it leaves,
// then every SM it frees), or beside it (the row blocks cut into parts on fewer persistent wgmma
// blocks, the leaves a warp each on SMs of their own from the start), by the cost model's predicted
// times, or inside where the leaves are few against the wgmma tiles (kInsideLeafTileShare, leaves of
// at most kTokenProductRows rows, and `inside_allowed`: no option asks for the 192-token tile or the rows
// product); `option` auto, after or beside (forced where a beside layout exists), or inside (the wgmma
// blocks' leaf warps, kWgmmaLeafWarps; after where the launch has no wgmma blocks and leaves of at most
// kTokenProductRows rows to run so).
struct LeafLayout {
  bool beside = false;
  bool inside = false;             // leaves=inside: the leaves in the wgmma blocks' leaf warps
  int leaf_sms = 0;                // beside: the leaves' SMs
  long long wide_target_blocks = 0;  // beside: row blocks x parts
  int wide_workers = 0;            // beside: persistent wgmma blocks
  double after_ns = 0, beside_ns = 0;  // the model's times; 0 where not predicted
};
// Only for a wgmma launch beside leaves under narrow_kernel=auto and wide_parts=auto (another narrow kernel,
// or parts the user fixed, keep them after). With leaves=beside, `wide_parts` and `leaf_sms_option` (a
// number or auto) fix the beside layout's parts per row block and leaf SMs, the model choosing the rest: knobs
// for measuring the layout; an error where nothing fits them, or leaf_sms without leaves=beside.
Ruled<LeafLayout> leaf_layout(const std::string& option, const std::string& wide_parts, const std::string& narrow_option,
                              const std::string& leaf_sms_option, bool inside_allowed,
                              ItemKernel wide, const AttentionShape& shape, const BlockCensus& census,
                              const ItemLengths& after, const std::optional<DeviceRates>& rates, const DeviceLimits& device);

// Where a wgmma launch's split row blocks combine their parts: 1, each part writes its rows and the merge
// kernel (or a folding leaf) combines them; n > 1, a block's n parts run as one thread-block cluster that
// shares its rows and combines them on chip (combine_cluster_rows). Only where every wide block is cut into
// the same n parts, n of kClusterParts, a block per item. `option`: part_merge (auto, kernel, cluster);
// auto takes pairs in one wave (the SMs rounded down to even) where no query has rows elsewhere or the
// other rows are leaves inside the clusters (`leaves_inside`), which their combine folds (fold_leaves);
// `leaves_fold` false: the schedule built with pairs could not fold them (Schedule::cluster_rows_fold).
Ruled<int> part_merge(const std::string& option, ItemKernel wide, const BlockCensus& census, const BuildChoices& build,
                      const DeviceLimits& device, bool leaves_inside = false, bool leaves_fold = true);

// ---- the launches of the built schedule ----

// The kernel of the narrow items: CUDA-core blocks for fp32; a warp per item, an SM's twelve to a
// block, where the leaves have SMs of their own; else `option` (blocks, warps) or, for auto, a warp
// per item where a 16-row block would spend more on fixed costs than streaming (four measured
// cases). `alone`: no wide launch or GEMM runs beside.
Ruled<ItemKernel> narrow_kernel(DType dtype, const std::string& option, int leaf_sms, const std::vector<long long>& items,
                                bool alone, const DeviceLimits& device, bool inside = false);

// The workers of one launch: persistent ones (as many as are resident) for many short items on the
// mma.sync kernels, else one per item; whole-SM leaf warps fill their SMs; wgmma blocks dealt runs
// of items (BuildChoices::wide_workers) are those runs. `option` narrow_workers (auto, items,
// resident) fixes the choice for a launch of mma.sync items.
Ruled<int> launch_workers(const char* launch, const std::string& option, ItemKernel kernel, DType dtype,
                          const std::vector<long long>& items, int leaf_sms, int dealt_runs, const DeviceLimits& device);

// The warp kernels' product layout (NarrowProduct): `option` narrow_product (auto, rows, tokens). tokens
// needs the warp kernels (item_warps, sm_item_warps) and narrow items of at most kTokenProductRows
// rows; elsewhere rows, saying why. auto takes tokens where the items have at most
// kTokenProductAutoRows rows and the leaves do not fold (`fold`: rule fold_leaves), whose loads of the
// wide rows the token layout makes twice as many.
Ruled<NarrowProduct> narrow_product(const std::string& option, ItemKernel narrow, bool fold, const Schedule& s,
                                    bool inside = false);

// The wgmma kernel's K/V tile in tokens (kWgmmaTileTokens): `option` 128 or 192, or auto: 192 where
// every wide item has at least kWideTileLongTokens tokens, else 128. `items`: the wide items' token counts.
// Leaves inside the wgmma blocks (`inside`) take 128.
Ruled<int> wide_tile(const std::string& option, ItemKernel wide, const std::vector<long long>& items, bool inside = false);

// The most rows a lane of the `narrow` kernel's leaves folds to do their queries' merge: kFoldRounds
// where Schedule::narrow_rows_fold(kFoldRounds), kLongFoldRounds where token_warps' long-fold kernel
// can, 0 where neither (MergeParams::fold_rounds).
int fold_rounds(const Schedule& s, ItemKernel narrow);

// Whether the narrow launch does the merge, as the wgmma launch's dependent, and in how many rounds: the
// rows a folding leaf's lane folds (fold_rounds; LaunchChoices::fold_rounds), or 0 where it does not: its
// rows cannot, or waiting for the wgmma launch costs more than the merge.
// Leaves inside a cluster launch (`cluster` > 1): kFoldRounds where its combine folds them
// (Schedule::cluster_rows_fold).
Ruled<int> fold_leaves(const Schedule& s, ItemKernel wide, ItemKernel narrow, int narrow_workers, int leaf_sms,
                        const DeviceLimits& device, bool inside = false, int cluster = 1);

// Whether the narrow items' K/V copies ask L2 to evict their lines first (LaunchChoices::leaf_evict_first):
// where wide items or cuBLAS chunks run in the same plan and no other row block reads what a narrow block
// reads (its leaves), so that streaming the leaves does not push the shared segments' K/V and the partial
// rows out of L2. `option` leaf_l2: normal, evict_first (where allowed), auto.
Ruled<bool> leaf_evict_first(const std::string& option, const BlockCensus& c, const Schedule& s);

// Whether leaves after a wgmma launch that they do not fold run as its programmatic dependent launch
// (LaunchRecipe::chained_leaves) rather than on a second stream (side_by_side): `option` leaf_launch,
// auto: wherever the device has dependent launches.
Ruled<bool> chain_leaves(const std::string& option, const Schedule& s, ItemKernel wide, bool fold, int leaf_sms,
                         const DeviceLimits& device, bool inside = false);

// Whether the merge kernel runs: some query has no partial row or several, or a cuBLAS row, and the
// leaves do not fold.
Ruled<bool> run_merge(const Schedule& s, bool fold);

// Whether the merge starts while the launch before it ends (option merge_launch): only where that launch
// ends last (one launch, or chained leaves); auto, after a single launch that leaves half the GPU idle.
Ruled<bool> overlap_merge(const std::string& option, const Schedule& s, ItemKernel wide, ItemKernel narrow,
                          const LaunchChoices& launches, const DeviceLimits& device, bool inside);

// Warps per query of the merge: four for a query of more than kMergeSplitAbove partials.
Ruled<int> merge_warps(const Schedule& s);

// The launch recipe the choices make.
Ruled<LaunchRecipe> launch_recipe(const Schedule& s, const LaunchChoices& launches, int leaf_sms, bool inside = false);

}  // namespace hydragen::cuda
