#pragma once
// How the flash and hydragen backends cut a problem into work (host code, no CUDA).
//
// flat_schedule: one item per (sequence, KV head, row block) over the sequence's whole path: a
//   shared segment is read once per sequence (cuda-flash).
// segment_schedule: one item per (segment, KV head, row block) over one segment, the rows being the
//   stacked queries of every sequence below it (indexing.hpp): a shared segment is read once per row
//   block of 64 or 128 queries (cuda-hydragen); a segment of too few readers to fill a 16-row block
//   is read within each reader's item instead (ScheduleOptions::inline_narrow_segments).
// gemm_schedule: segment_schedule's items for the segments of one sequence, and for each shared
//   segment GEMM chunks, all its stacked rows against a range of its tokens (cuda-hydragen-cublas).
// Each splits an item's tokens (split-KV) while its launch (narrow or wide items) would under-fill
// the GPU (narrow blocks that stream their own K/V need one per SM, the others a wave of resident
// blocks), and lists, for every query, the partial rows the merge combines. Every item has tokens; a
// query that attends nothing has no rows, and the merge kernel writes its identity (O = 0, LSE = -inf).
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "kernels/params.hpp"
#include "kernels/tile_config.hpp"

namespace hydragen::cuda {

inline constexpr int kMinSplitTokens = 256;    // split-KV never makes an item shorter than this
inline constexpr int kMaxSplits = kMergeRound;  // nor more parts of one block than the merge folds in one round

// What a schedule needs of the device and the kernels that will run it. Every field is required:
// for_device derives them from the device the plan is made for.
struct ScheduleOptions {
  int sms = 0;                 // SMs of the device: streaming narrow blocks aim for one each; hydragen_schedule's one-launch test
  int narrow_slots = 0;        // narrow blocks resident at once on the device (narrow_parts in schedule.cpp)
  int max_rows = 0;            // largest row block: kNarrowRows (no wide kernel), kWideRows or kWgmmaRows
  int wide_target_blocks = 0;  // blocks the wide launch should reach
  // > 0 (wgmma items only): the wide items (cut for wide_target_blocks as before) run on that many
  // persistent blocks, dealt to them round-robin in the order of their parts, so that any number of
  // SMs can be left to the leaves; 0: a block per wide item.
  int wide_workers = 0;
  // segment_schedule (cuda-hydragen): a segment whose readers' stacked rows fit one narrow block
  // (at most kNarrowRows: two sequences at Hq / Hkv = 8) is read in each reader's own item, over its
  // path from there to the leaf as flat_schedule reads it, not in items of its own, where such paths
  // times the KV heads are at least a quarter of the SMs. Batching so few readers saves no tile, only
  // the re-reads of its K/V, which their items, side by side, find in L2; it costs each reader a
  // partial more and the merge. On a nearly idle GPU, though, a path's split parts, cut where its
  // tokens fall rather than at tiles, run a tile longer than a segment's own parts: there the
  // segments stay apart. Measured on an H100 (perf-notes v22): 512 pairs sharing 256 or 512 of 1088
  // tokens 0.938x and 0.957x; at Hq = Hkv = 5, B = 8 and 16 0.67x to 0.96x, B = 4 0.98x and 1.06x, B = 1
  // and 2 up to 1.22x slower; B = 1 and 2 at Hq / Hkv = 8 up to 1.16x slower. false: every segment in
  // items of its own.
  bool inline_narrow_segments = true;

  // Narrow blocks: a wave of the resident ones. Wide: one wave of wgmma blocks (one per SM; each
  // split adds a partial per row to the merge and a pipeline fill), three of the latency-bound
  // mma.sync ones (perf-notes v3, v4); no persistent wide blocks.
  static ScheduleOptions for_device(int sms, ItemKernel wide);
  void validate() const;  // throws std::invalid_argument naming a field that is not positive (wide_workers: negative)
};

// One chunk of a shared segment for cuda-hydragen-cublas: the tokens [token_begin, token_end) of
// the segment against its `rows` stacked query rows, for every KV head at once. Its partial rows
// are KV head by KV head: row r of KV head h is first_row + h * rows + r.
struct GemmChunk {
  int segment = 0;
  int token_begin = 0, token_end = 0;  // positions in the segment
  int rows = 0;                        // stacked query rows per KV head
  int first_row = 0;                   // partial row of KV head 0's first stacked row
  int gathered_row = 0;                // KV head 0's first row in the gathered queries; head h at + h * rows
};

struct Schedule {
  std::vector<WorkItem> narrow_items;  // num_rows <= kNarrowRows
  std::vector<WorkItem> wide_items;    // kNarrowRows < num_rows <= max_rows
  // [wide workers + 1] with ScheduleOptions::wide_workers: persistent block w runs the wide items
  // [wide_worker_items[w], wide_worker_items[w + 1]); empty: a block per wide item.
  std::vector<int> wide_worker_items;
  std::vector<int> item_segments;
  std::vector<GemmChunk> gemm_chunks;  // gemm_schedule only
  std::vector<int> gather_query;       // [gathered rows] the query row each gathered row copies (gemm_schedule)
  std::vector<int> row_query;          // [rows] the query row (indexing.hpp) of each partial row
  std::vector<int> row_limit;          // [rows] positions of its item's token list the row may see
  std::vector<int> row_leaf;           // [rows] the sequence whose leaf ends the row's token list, or -1
  std::vector<int> merge_offsets;      // [B * q_len * Hq + 1]
  std::vector<int> merge_rows;         // partial rows per query, ascending
  int num_rows() const { return static_cast<int>(row_query.size()); }
  bool needs_merge() const;            // some query has no partial row or several (one is written by its block)
  int max_partials() const;            // the most partial rows of one query
  // Whether the narrow items can do the merge (MergeParams::fold_wide_rows): every query has rows,
  // each of several has exactly one narrow item's row, and a lane's rounds of loading and folding
  // the others (their number, twice for a narrow item of more than 8 rows: a lane holds two) are at
  // most `most_rounds`.
  bool narrow_rows_fold(int most_rounds) const;
};

// The parts a block of `tokens` tokens is split into when `parts` are asked for: at most
// kMaxSplits, none shorter than kMinSplitTokens, at least one.
long long split_count(long long tokens, long long parts);
// A wide block's: its share of `target_blocks` by tokens (tokens x target / the `wide_tokens` of all
// the launch's wide blocks, rounded down), split_count'ed.
long long wide_split_count(long long tokens, long long target_blocks, long long wide_tokens);

// The items' tokens, summed.
long long total_tokens(const std::vector<WorkItem>& items);

// A launch of a block per item as the block scheduler runs it, one block per SM: the blocks in item
// order, each on the first SM free, an item's time its tokens. Its length, and the SM time it leaves
// idle before its end (where another launch's blocks run), in tokens. A tree's wide items differ in
// length (a long prefix's parts beside short groups'), so neither "waves x longest item" nor the SMs
// without a block say how long it runs or what room it leaves (perf-notes v21).
struct ListSchedule {
  long long end_tokens = 0, idle_sm_tokens = 0;
};
ListSchedule list_schedule(const std::vector<WorkItem>& items, int sms);

// Whether a launch of the mma kernels should run persistent blocks (`slots` of them, those resident
// at once) over `items` rather than a block per item: only for many short items, where a block per
// one-tile item is a chain of dependent latencies; over a few waves of items, or long ones, the
// hardware's block scheduler balances better (perf-notes v7).
bool persistent_blocks(const std::vector<WorkItem>& items, int slots);

// The kernel of a launch of narrow items (16-bit storage): ItemKernel::warps, a warp per item, where
// a narrow block would spend more of each item on its fixed costs (finding its tables, the first
// tile's latency, the fold of its four token warps) than on streaming its tokens, and four warps
// with an item each overlap those latencies, or where narrow blocks would run the items in more
// waves than warps; ItemKernel::narrow otherwise, whose four token warps cut the chain of an item's
// tiles by four. `alone`: no wide launch runs beside (cuda-flash; cuda-hydragen's one-launch form).
// Warps when the items (64-token tiles on average, n of them, `narrow_slots` blocks resident):
//   - average at most one tile and number at least the SMs (fewer, each on an SM of its own, finish
//     sooner with their tiles split over four warps);
//   - average at most three tiles and outnumber the slots (a block would run several in turn);
//   - average at most eight tiles and number between one and two waves of blocks: the second wave's
//     few blocks would run alone, where one wave of warps holds them all;
//   - alone, average at most 18 tiles and number two to four waves of blocks (one of warps): the
//     same tail, over the whole GPU.
// Measured on an H100 (perf-notes v15, v17): beyond these, warps were up to 1.16x slower (128
// tokens, 64 to 256 items), 1.03x to 1.05x (64 tokens, 64 or 128 items, P >= 4096; 256 tokens,
// 512-token leaves split in two beside a wide launch), 1.02x to 3x (cuda-flash's paths: fewer items
// than slots, 20 tiles or more, or more than four waves).
ItemKernel narrow_item_kernel(const std::vector<WorkItem>& items, bool alone, const ScheduleOptions& options);

// Whether leaves that fold the merge (Schedule::narrow_rows_fold) gain more than they lose by
// waiting for the wgmma launch before them, of `wide_blocks` blocks that leave `idle_sm_tokens` of
// SM time idle (list_schedule). Those blocks fill their SMs, so the `narrow_blocks` run beside them
// only on the SMs they leave free, and there a folding leaf block holds its place until the wgmma
// launch ends, where a side stream's would make way for the next. So: all the narrow blocks fit on
// the SMs without a wgmma block at once, or the idle SM time is at most kFoldForgoneSmTokens.
// Measured on an H100 (perf-notes v18): 12 free SMs beside items of 2731 tokens, 0.97x; of 5419,
// 1.07x slower; 52 free SMs beside 8192 tokens, 1.19x slower. v21: the two-level trees at B = 1024,
// whose group items end long before the prefix's (212992 idle SM tokens), 1.04x to 1.06x slower.
inline constexpr long long kFoldForgoneSmTokens = 12 * 4096;
bool folding_leaves_pay(long long wide_blocks, long long idle_sm_tokens, long long narrow_blocks, int narrow_blocks_per_sm,
                        int sms);

Schedule flat_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);
Schedule segment_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);

// cuda-hydragen's schedule (its form=auto): the segment schedule, in one launch of narrow blocks
// (max_rows kNarrowRows) where that form puts at most one block on each SM and the wide form would
// take two launches (wide blocks beside narrow leaves); otherwise the wide form. Such a problem is
// latency alone: the narrow form reads a shared segment once per 16 rows instead of once per 128,
// but those reads run side by side on idle SMs, and it saves the second launch and the join of two
// streams (perf-notes v9).
Schedule hydragen_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);

// cuda-hydragen-cublas's schedule: each segment that more than one sequence attends becomes GEMM
// chunks of at most `max_chunk_scores` scores (KV heads x stacked rows x tokens; at least 16 tokens
// whatever the bound) and at most kMaxChunkTokens tokens, the other segments items as in
// segment_schedule.
Schedule gemm_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                       long long max_chunk_scores);

}  // namespace hydragen::cuda
