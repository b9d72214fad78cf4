#pragma once
// The schedules of the flash and hydragen backends: a problem cut into work items (host code, no
// CUDA). Building them decides nothing: the rules (rules.hpp) choose the row blocks, the splits and
// the persistent workers first, from the row blocks' census below; build() cuts by those choices.
//
// Groups are runs of tokens some sequences attend together:
//   path_groups: each sequence's whole path (cuda-flash: a shared segment is read once per sequence);
//   segment_groups: one per segment, the rows being the stacked queries of every sequence below it
//     (indexing.hpp; cuda-hydragen: a shared segment is read once per row block), or, with
//     `inline_paths`, each reader's path from a segment of few readers down (rules.hpp: inline_paths).
// Each group becomes row blocks (per KV head, at most max_rows rows), each block items (its tokens
// split into parts, split-KV), or for cuda-hydragen-cublas GEMM chunks; each query lists the partial
// rows the merge combines. Every item has tokens; a query that attends nothing has no rows, and the
// merge writes its identity (O = 0, LSE = -inf).
#include <vector>

#include "decision.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "params.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

inline constexpr int kMinSplitTokens = 256;    // split-KV never makes an item shorter than this
inline constexpr int kMaxSplits = kMergeRound;  // nor more parts of one block than the merge folds in one round

struct Group {
  std::vector<int> segments;  // laid end to end
  std::vector<int> seqs;      // whose queries attend them
  long long tokens = 0;
  bool ends_in_leaf = false;  // the last segment is their leaf (causal rows)
  bool gemm = false;          // becomes GEMM chunks (cuda-hydragen-cublas's shared segments)
};

std::vector<Group> path_groups(const SharingTree& tree);
std::vector<Group> segment_groups(const AttentionShape& shape, const SharingTree& tree, bool inline_paths);
// Paths with a segment whose readers' stacked rows fit one narrow block (what inline_paths would
// inline), and the KV heads: the inline_paths rule's inputs.
long long narrow_paths(const AttentionShape& shape, const SharingTree& tree);

// One row block: rows [first, first + count) of a group's stacked queries over one KV head.
struct RowBlock {
  const Group* group;
  int kv_head, first, count;
  bool narrow() const { return count <= kNarrowRows; }
};

// The groups cut into row blocks, and what the rules read of them before any item is built: each
// kind's blocks and tokens. build() cuts these blocks into items.
struct BlockCensus {
  int max_rows = 0;                      // the largest row block the groups were cut into
  std::vector<RowBlock> blocks;          // in the order their items start (schedule.cpp says why)
  long long narrow_blocks = 0;
  long long wide_tokens = 0;             // all wide blocks' tokens (their split is by share of these)
  long long wide_distinct_tokens = 0;    // the wide blocks' distinct (segment, KV head) tokens: K/V read once from DRAM
  bool narrow_read_once = true;          // no other block reads a narrow block's K/V (rules.hpp: leaf_evict_first)
  bool narrow_stream = false;            // ... and no wide block runs: they stream K/V alone (narrow_split)
  std::vector<long long> narrow_tokens;  // each narrow block's, in item order
  std::vector<long long> wide_block_tokens;  // each wide block's, in item order
};
// `groups` cut into row blocks of at most `max_rows` rows (a group of at most kNarrowRows rows: one
// narrow block), counted. The blocks point into `groups`, which must outlive the census.
BlockCensus census(const AttentionShape& shape, const std::vector<Group>& groups, int max_rows);

// The parts a block of `tokens` tokens is split into when `parts` are asked for: at most
// kMaxSplits, none shorter than kMinSplitTokens, at least one.
long long split_count(long long tokens, long long parts);
// A wide block's: its share of `target_blocks` by tokens (tokens x target / the `wide_tokens` of all
// the launch's wide blocks, rounded down), split_count'ed.
long long wide_split_count(long long tokens, long long target_blocks, long long wide_tokens);

// The items' lengths a census makes under `choices`, in item order (wide before dealing to workers).
struct ItemLengths {
  std::vector<long long> narrow, wide;
};
ItemLengths item_lengths(const BlockCensus& c, const BuildChoices& choices);

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
  // [wide workers + 1] with BuildChoices::wide_workers: persistent block w runs the wide items
  // [wide_worker_items[w], wide_worker_items[w + 1]); empty: a block per wide item.
  std::vector<int> wide_worker_items;
  std::vector<int> item_segments;
  std::vector<GemmChunk> gemm_chunks;  // cuda-hydragen-cublas only
  std::vector<int> gather_query;       // [gathered rows] the query row each gathered row copies (GEMM chunks)
  std::vector<int> row_query;          // [rows] the query row (indexing.hpp) of each partial row
  std::vector<int> row_limit;          // [rows] positions of its item's token list the row may see
  std::vector<int> row_leaf;           // [rows] the sequence whose leaf ends the row's token list, or -1
  // [clusters + 1] with BuildChoices::cluster_leaves: the narrow items, ordered by the cluster whose rows
  // their queries' are, cluster c's from cluster_leaf_items[c]; empty where some narrow item's queries are
  // in no cluster's rows or in two.
  std::vector<int> cluster_leaf_items;
  std::vector<int> merge_offsets;      // [B * q_len * Hq + 1]
  std::vector<int> merge_rows;         // partial rows per query, ascending
  int num_rows() const { return static_cast<int>(row_query.size()); }
  bool needs_merge() const;            // some query has no partial row or several (one is written by its block)
  int max_partials() const;            // the most partial rows of one query
  // Whether the narrow items, run by the `narrow` kernel, can do the merge (MergeParams::fold_wide_rows):
  // every query has rows, each of several has exactly one narrow item's row, and a lane's rounds of
  // loading and folding the others are at most `most_rounds`. A round per other row; twice as many
  // where a lane holds two rows: the warp kernels' rows product, in an item of more than 8 rows.
  // token_warps' lanes hold one row each, after the token warps' fold.
  bool narrow_rows_fold(int most_rounds, ItemKernel narrow) const;
  // Whether a cluster launch's combine can fold its leaves' rows (MergeParams::fold_wide_rows in the
  // wgmma launch): the narrow items grouped by cluster, every query has rows, and each of several has
  // one cluster row and at most `most_rounds` others.
  bool cluster_rows_fold(int most_rounds) const;
};

// The schedule of `groups` (every one with tokens has rows) cut by `choices`: the census's row blocks
// (cut at choices.max_rows: std::logic_error otherwise), split and dealt as chosen; GEMM groups into
// chunks of at most max_chunk_scores.
Schedule build(const AttentionShape& shape, const std::vector<Group>& groups, const BlockCensus& census,
               const BuildChoices& choices);

// The items' tokens, summed.
long long total_tokens(const std::vector<WorkItem>& items);
long long total_tokens(const std::vector<long long>& lengths);

// A launch of a block per item as the block scheduler runs it, one block per SM: the blocks in item
// order, each on the first SM free, an item's time its tokens. Its length, and the SM time it leaves
// idle before its end (where another launch's blocks run), in tokens. A tree's wide items differ in
// length (a long prefix's parts beside short groups'), so neither "waves x longest item" nor the SMs
// without a block say how long it runs or what room it leaves.
struct ListSchedule {
  long long end_tokens = 0, idle_sm_tokens = 0;
};
ListSchedule list_schedule(const std::vector<long long>& lengths, int sms);
std::vector<long long> item_lengths(const std::vector<WorkItem>& items);

}  // namespace hydragen::cuda
