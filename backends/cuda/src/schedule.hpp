#pragma once
// How the flash and hydragen backends cut a problem into work items (host code, no CUDA).
//
// flat_schedule: one item per (sequence, KV head, row block) over the sequence's whole path: a
//   shared segment is read once per sequence (cuda-flash).
// segment_schedule: one item per (segment, KV head, row block) over one segment, the rows being the
//   stacked queries of every sequence below it: a shared segment is read once per row block of 64
//   or 128 queries (cuda-hydragen).
// Both split an item's tokens (split-KV) while its launch (narrow or wide items) would under-fill
// the GPU (narrow blocks that stream their own K/V need one per SM, the others a wave of resident
// blocks), and list, for every query, the partial rows the merge combines. Every item has tokens; a
// query that attends nothing has no rows, and the merge kernel writes its identity (O = 0, LSE = -inf).
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "kernels/params.hpp"

namespace hydragen::cuda {

inline constexpr int kNarrowRows = 16;       // rows of a one-warp block
inline constexpr int kWideRows = 64;         // rows of a four-warp mma.sync block
inline constexpr int kWgmmaRows = 128;       // rows of a two-warpgroup wgmma block (sm_90a)
inline constexpr int kMinSplitTokens = 256;  // split-KV never makes an item shorter than this
inline constexpr int kMaxSplits = 32;        // nor more parts of one block than the merge folds in one round
inline constexpr int kMaxItemSegments = 32;  // longer paths are cut into several items

struct ScheduleOptions {
  int narrow_slots = 396;         // narrow blocks resident at once (3 per SM on an H100): schedule.cpp's narrow_parts
  int max_rows = kWideRows;       // largest row block: kNarrowRows (no wide kernel), kWideRows or kWgmmaRows
  int wide_target_blocks = 1188;  // blocks the wide launch should reach (3 waves of the mma.sync blocks)
  int sms = 132;                  // SMs of the device: streaming narrow blocks aim for one each (narrow_parts);
                                  // hydragen_schedule's one-launch test
};

struct Schedule {
  std::vector<WorkItem> narrow_items;  // num_rows <= kNarrowRows
  std::vector<WorkItem> wide_items;    // kNarrowRows < num_rows <= max_rows
  std::vector<int> item_segments;
  std::vector<int> row_query;          // [rows]
  std::vector<int> row_limit;          // [rows]
  std::vector<int> merge_offsets;      // [B * q_len * Hq + 1]
  std::vector<int> merge_rows;         // partial rows per query, ascending
  int num_rows() const { return static_cast<int>(row_query.size()); }
  bool needs_merge() const;            // some query has no partial row or several (one is written by its block)
  int max_partials() const;            // the most partial rows of one query
};

// Whether a launch of the mma kernels should run persistent blocks (`slots` of them, those resident
// at once) over `items` rather than a block per item: only for many short items. Persistent blocks
// pay there: MHA (256, 8192, 64) has 8192 one-tile leaves, 0.219 -> 0.196 ms. Over a few waves of
// items, or long ones, the hardware's block scheduler balances better, and it backfills the SMs a
// wide launch beside leaves idle: (1024, 16384, 64), 1024 leaves, 0.144 ms with a block per item
// against 0.149 persistent; cuda-flash at B = 2048 up to 18% slower persistent (H100).
bool persistent_blocks(const std::vector<WorkItem>& items, int slots);

Schedule flat_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);
Schedule segment_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);

// cuda-hydragen's schedule: the segment schedule, in one launch of narrow blocks (max_rows
// kNarrowRows) where that form puts at most one block on each SM and the wide form would take two
// launches (wide blocks beside narrow leaves); otherwise the wide form. Such a problem is latency
// alone: the narrow form reads a shared segment once per 16 rows instead of once per 128, but those
// reads run side by side on idle SMs, and it saves the second launch and the join of two streams,
// and lets the merge start early (dependent_launch.cuh). Measured on the H100: (32, 1024, 64)
// 0.0176 -> 0.0168 ms, (32, 1024, 256) 0.0192 -> 0.0168, (32, 1024, 512) 0.0197 -> 0.0180; with a
// second block on an SM it lost: (32, 2048, 64) 0.0178 -> 0.0184, (64, 1024, 64) 0.0179 -> 0.0196,
// (32, 4096, 256) 0.0201 -> 0.0240.
Schedule hydragen_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options);

}  // namespace hydragen::cuda
