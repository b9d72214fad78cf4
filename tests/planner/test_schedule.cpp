// The work schedules of cuda-flash (path_groups), cuda-hydragen (segment_groups) and
// cuda-hydragen-cublas (segment_groups with GEMM groups), as build() cuts them and as the planner
// (plan_flash, plan_hydragen, plan_hydragen_cublas) decides them, checked on the host, no GPU needed,
// by a simulator that replays a schedule the way the kernels execute it: every item's rows attend
// the positions [token_begin, token_end) of its token list (its segments laid end to end) below
// their row_limit, with the item's KV head; every GEMM chunk's rows attend its token range of its
// segment. The simulator then checks that every query attends every token of its path except the
// causal tail of its leaf, each exactly once, with the KV head of its query head, and that the merge
// lists and the row blocks are what the kernels and the cost model rely on.
//
// Positions are recorded as runs (segment, [from, to)): the item's visible interval cut at segment
// boundaries. A run stands for each of its positions, so the per-query check (runs of a segment tile
// its expected tokens exactly, no overlap, no gap) is the multiset check without a per-token loop;
// that keeps thousands of random problems under a few seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "plan_forms.hpp"
#include "planner.hpp"
#include "rules.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {
namespace {

enum class Kind { flat, segment, gemm };
constexpr Kind kKinds[] = {Kind::flat, Kind::segment, Kind::gemm};

const char* kind_name(Kind kind) {
  return kind == Kind::flat      ? "cuda-flash's schedule"
         : kind == Kind::segment ? "cuda-hydragen's schedule"
                                 : "cuda-hydragen-cublas's schedule";
}

// Small enough that the random problems' shared segments take several chunks.
constexpr long long kTestChunkScores = 4096;

// An H100's limits: its name is device-rates.csv's row, so leaf_layout has rates.
const DeviceLimits kH100{132, true, true, "NVIDIA H100 80GB HBM3"};

PlanOptions flash(const std::string& asked = "") { return resolve_options("cuda-flash", flash_options(), PlanOptions::parse(asked)); }
PlanOptions hydragen(const std::string& asked = "") {
  return resolve_options("cuda-hydragen", hydragen_options(), PlanOptions::parse(asked));
}

// What a test cuts a problem by where it forces what the planner would derive from the device: the
// SMs (inline_paths' and narrow_split's), the resident narrow blocks narrow_split aims for, the row
// blocks' size, the wide launch's target and persistent wgmma blocks (BuildChoices), and inline_paths'
// option (auto, or never: every segment in items of its own however few its readers).
struct Cuts {
  int sms = 132;
  int narrow_slots = 396;
  int max_rows = kMma64Rows;
  long long wide_target_blocks = 1188;
  int wide_workers = 0;
  std::string inline_option = "auto";
  int wide_cluster = 1;  // > 1: each wide block's parts share its rows (rule part_merge)
};

Cuts cuts_of(int narrow_slots, int max_rows, long long wide_target_blocks, int sms = 132) {
  return {sms, narrow_slots, max_rows, wide_target_blocks, 0, "auto"};
}

// An H100's cuts for mma.sync blocks (the planner's for wide_kernel=mma64, and cuda-flash's).
const Cuts kH100Mma = cuts_of(396, kMma64Rows, 1188);

Cuts segments_apart(Cuts c) {
  c.inline_option = "never";
  return c;
}

// What a whole plan cut by: its device, its build choices, and the inline option it was given.
Cuts cuts_of(const Planned& p, const std::string& inline_option = "auto") {
  const PlanDecisions& d = p.decisions;
  return {d.device.sms, resident_blocks(ItemKernel::token_warps, d.device), d.build.max_rows, d.build.wide_target_blocks,
          d.build.wide_workers, inline_option, d.build.wide_cluster};
}

DeviceLimits device_of(const Cuts& c) { return {c.sms, false, false, "test device"}; }

// The groups of `kind`: inline_paths (the rule) decides cuda-hydragen's.
std::vector<Group> groups_of(Kind kind, const AttentionShape& shape, const SharingTree& tree, const Cuts& c) {
  if (kind == Kind::flat) return path_groups(tree);
  const bool inlined = kind == Kind::segment &&
                       inline_paths(c.inline_option, narrow_paths(shape, tree), shape.kv_heads, device_of(c)).choice;
  std::vector<Group> groups = segment_groups(shape, tree, inlined);
  if (kind == Kind::gemm) {
    for (Group& grp : groups) grp.gemm = grp.seqs.size() > 1;
  }
  return groups;
}

// The builder under forced cuts, with narrow_split (the rule) choosing the narrow blocks' parts.
Schedule make_schedule(Kind kind, const AttentionShape& shape, const SharingTree& tree, const Cuts& c,
                       long long chunk_scores = kTestChunkScores) {
  validate_problem(shape, tree);
  const std::vector<Group> groups = groups_of(kind, shape, tree, c);
  const BlockCensus blocks = census(shape, groups, c.max_rows);
  const long long parts = narrow_split(blocks, c.narrow_slots, device_of(c)).choice;
  const long long chunks = kind == Kind::gemm ? chunk_scores : 0;
  return build(shape, groups, blocks, BuildChoices{c.max_rows, parts, c.wide_target_blocks, c.wide_workers, chunks, c.wide_cluster});
}

// The decision of `rule` in a plan's log (a failure where it did not fire).
Decision decision_of(const Planned& p, const std::string& rule) {
  for (const Decision& d : p.decisions.log) {
    if (d.rule == rule) return d;
  }
  ADD_FAILURE() << "rule " << rule << " did not fire";
  return {};
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

template <typename T>
std::string list_text(const std::vector<T>& values) {
  std::ostringstream os;
  os << "{";
  for (std::size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << "}";
  return os.str();
}

// Enough to rebuild the tree with from_parents.
std::string tree_text(const SharingTree& tree) {
  std::vector<int> parents, lengths, leaves;
  for (int i = 0; i < tree.num_segments(); ++i) {
    parents.push_back(tree.parent(i));
    lengths.push_back(tree.length(i));
  }
  for (int s = 0; s < tree.num_seqs(); ++s) leaves.push_back(tree.leaf(s));
  return tree.describe() + ": from_parents(" + list_text(parents) + ", " + list_text(lengths) + ", " +
         list_text(leaves) + ")";
}

std::string problem_text(Kind kind, const AttentionShape& shape, const SharingTree& tree, const Cuts& cuts) {
  std::ostringstream os;
  os << kind_name(kind) << " with " << cuts.sms << " SMs, narrow_slots " << cuts.narrow_slots << ", max_rows " << cuts.max_rows
     << ", wide target " << cuts.wide_target_blocks << ", inline=" << cuts.inline_option
     << " of " << shape.describe() << " over " << tree_text(tree);
  return os.str();
}

std::string item_text(bool wide, std::size_t index, const WorkItem& it) {
  std::ostringstream os;
  os << (wide ? "wide" : "narrow") << " item " << index << " {kv_head " << it.kv_head << ", rows [" << it.first_row
     << ", +" << it.num_rows << "), item_segments [" << it.first_segment << ", +" << it.num_segments << "), tokens ["
     << it.token_begin << ", " << it.token_end << ")}";
  return os.str();
}

std::string query_text(const AttentionShape& shape, int query) {
  const int h = query % shape.q_heads;
  const int qi = query / shape.q_heads % shape.q_len;
  const int b = query / shape.q_heads / shape.q_len;
  return "query " + std::to_string(query) + " [b " + std::to_string(b) + ", qi " + std::to_string(qi) + ", h " +
         std::to_string(h) + "]";
}

struct Run {
  int segment;
  long long from, to;  // tokens [from, to) of the segment
};

// Replays the schedule and checks every rule; the first broken one is returned with the problem.
::testing::AssertionResult check_schedule(Kind kind, const AttentionShape& shape, const SharingTree& tree,
                                          const Cuts& cuts, const Schedule& s,
                                          long long chunk_scores = kTestChunkScores) {
  auto fail = [&] { return ::testing::AssertionFailure() << problem_text(kind, shape, tree, cuts) << "\n  "; };
  const int g = shape.group_size();
  const int queries = shape.num_seqs * shape.q_len * shape.q_heads;
  const int rows = s.num_rows();
  if (s.row_limit.size() != s.row_query.size() || s.row_leaf.size() != s.row_query.size()) {
    return fail() << "row_limit has " << s.row_limit.size() << " entries and row_leaf " << s.row_leaf.size()
                  << " but row_query has " << s.row_query.size();
  }

  std::vector<int> row_owner(rows, -1);            // item (numbered narrow first, then wide) per row
  std::vector<std::vector<Run>> attended(queries);  // what each query attends
  // A row block: its KV head, token list and (flat) sequence, and the query of its first row. Each
  // of its split parts is an item with rows of its own; the parts must tile the token list.
  using ListKey = std::tuple<int, std::vector<int>, int>;  // kv_head, segments, sequence (a path item) or -1
  std::map<ListKey, std::map<int, std::vector<std::pair<int, int>>>> blocks;  // -> first query -> parts
  std::map<ListKey, std::map<int, int>> block_rows;                            // -> first query -> rows

  // cuda-flash reads every segment in each reader's own item (a piece of its path); cuda-hydragen
  // only those whose readers' stacked rows fit one narrow block, where inline=auto and the paths
  // below them, times the KV heads, are at least a quarter of the SMs (rule inline_paths, written
  // out); every other one in items of its own.
  auto fits_a_block = [&](int segment) {
    return static_cast<long long>(tree.seqs_below(segment).size()) * shape.q_len * g <= kNarrowRows;
  };
  long long narrow_paths = 0;
  for (int seq = 0; seq < tree.num_seqs(); ++seq) {
    const std::vector<int>& path = tree.path(seq);
    narrow_paths += std::any_of(path.begin(), path.end(), fits_a_block);
  }
  const bool inlining = kind == Kind::segment && cuts.inline_option == "auto" && 4 * narrow_paths * shape.kv_heads >= cuts.sms;
  auto per_sequence = [&](int segment) { return kind == Kind::flat || (inlining && fits_a_block(segment)); };
  int item_number = 0;
  for (bool wide : {false, true}) {
    const std::vector<WorkItem>& items = wide ? s.wide_items : s.narrow_items;
    for (std::size_t i = 0; i < items.size(); ++i, ++item_number) {
      const WorkItem& it = items[i];
      const std::string name = item_text(wide, i, it);
      // A cluster's parts after its first compute the first's rows over their own tokens.
      const bool shares_rows = wide && cuts.wide_cluster > 1 && i % cuts.wide_cluster != 0;
      if (shares_rows && (it.first_row != items[i - 1].first_row || it.num_rows != items[i - 1].num_rows)) {
        return fail() << name << ": a part of a cluster of " << cuts.wide_cluster << " without its first part's rows";
      }
      if (it.kv_head < 0 || it.kv_head >= shape.kv_heads) return fail() << name << ": KV head out of range";
      if (!wide && (it.num_rows < 1 || it.num_rows > kNarrowRows)) return fail() << name << ": a narrow item needs 1..16 rows";
      if (wide && (it.num_rows <= kNarrowRows || it.num_rows > cuts.max_rows)) {
        return fail() << name << ": a wide item needs 17.." << cuts.max_rows << " rows";
      }
      if (it.first_row < 0 || it.first_row + it.num_rows > rows) return fail() << name << ": rows outside [0, " << rows << ")";
      if (it.num_segments < 1 || it.num_segments > kMaxItemSegments) {
        return fail() << name << ": needs 1.." << kMaxItemSegments << " segments";
      }
      if (it.first_segment < 0 || it.first_segment + it.num_segments > static_cast<int>(s.item_segments.size())) {
        return fail() << name << ": segments outside item_segments (" << s.item_segments.size() << " entries)";
      }
      const std::vector<int> list(s.item_segments.begin() + it.first_segment,
                                  s.item_segments.begin() + it.first_segment + it.num_segments);
      std::vector<long long> starts;  // where each segment of the list begins in the token list
      long long list_tokens = 0;
      for (int segment : list) {
        if (segment < 0 || segment >= tree.num_segments()) return fail() << name << ": segment " << segment << " does not exist";
        starts.push_back(list_tokens);
        list_tokens += tree.length(segment);
      }
      if (!(0 <= it.token_begin && it.token_begin < it.token_end && it.token_end <= list_tokens)) {
        return fail() << name << ": token range is empty or outside its " << list_tokens << "-token list " << list_text(list);
      }
      const bool path_item = per_sequence(list.front());
      if (!path_item && it.num_segments != 1) return fail() << name << ": a segment item covers one segment";
      if (kind == Kind::gemm && tree.seqs_below(list.front()).size() > 1) {
        return fail() << name << ": segment " << list.front() << " is shared, so it belongs to GEMM chunks";
      }

      const int first_seq = s.row_query[it.first_row] / shape.q_heads / shape.q_len;
      if (path_item) {
        // A sequence's own path: the list is a contiguous piece of it.
        const std::vector<int>& path = tree.path(first_seq);
        const auto at = std::find(path.begin(), path.end(), list.front());
        if (at == path.end() || path.end() - at < it.num_segments || !std::equal(list.begin(), list.end(), at)) {
          return fail() << name << ": segments " << list_text(list) << " are not a piece of sequence " << first_seq
                        << "'s path " << list_text(path);
        }
      }

      for (int r = it.first_row; r < it.first_row + it.num_rows; ++r) {
        if (row_owner[r] != -1 && !shares_rows) return fail() << name << ": row " << r << " also belongs to item " << row_owner[r];
        if (!shares_rows) row_owner[r] = item_number;
        const int q = s.row_query[r];
        if (q < 0 || q >= queries) return fail() << name << ": row " << r << " has row_query " << q << " outside [0, " << queries << ")";
        const int h = q % shape.q_heads;
        if (h / g != it.kv_head) {
          return fail() << name << ": row " << r << " is " << query_text(shape, q) << " whose KV head is " << h / g;
        }
        if (path_item && q / shape.q_heads / shape.q_len != first_seq) {
          return fail() << name << ": row " << r << " is " << query_text(shape, q) << ", not of sequence " << first_seq;
        }
        const int limit = s.row_limit[r];
        if (limit < 0 || limit > list_tokens) return fail() << name << ": row " << r << " has row_limit " << limit;
        // A leaf ending the list shortens the row's limit when the run's leaf_lengths say so.
        const int leaf_of = tree.is_leaf(list.back()) ? q / shape.q_heads / shape.q_len : -1;
        if (s.row_leaf[r] != leaf_of) {
          return fail() << name << ": row " << r << " has row_leaf " << s.row_leaf[r] << ", expected " << leaf_of;
        }
        // Positions pos in [token_begin, token_end) with pos < limit, cut at segment boundaries.
        const long long from = it.token_begin, to = std::min<long long>(it.token_end, limit);
        for (std::size_t k = 0; k < list.size(); ++k) {
          const long long lo = std::max(from, starts[k]), hi = std::min(to, starts[k] + tree.length(list[k]));
          if (lo < hi) attended[q].push_back({list[k], lo - starts[k], hi - starts[k]});
        }
      }

      const ListKey key{it.kv_head, list, path_item ? first_seq : -1};
      const int block = s.row_query[it.first_row];
      blocks[key][block].push_back({it.token_begin, it.token_end});
      auto [entry, fresh] = block_rows[key].emplace(block, it.num_rows);
      if (!fresh && entry->second != it.num_rows) {
        return fail() << name << ": a split part of a block of " << entry->second << " rows has " << it.num_rows;
      }
    }
  }
  // GEMM chunks: a shared segment's tokens against all its stacked rows, every KV head at once.
  std::map<int, std::vector<std::pair<int, int>>> chunk_ranges;  // segment -> token ranges
  if (kind != Kind::gemm && !s.gemm_chunks.empty()) return fail() << "only cuda-hydragen-cublas makes GEMM chunks";
  for (std::size_t i = 0; i < s.gemm_chunks.size(); ++i, ++item_number) {
    const GemmChunk& c = s.gemm_chunks[i];
    const std::string name = "GEMM chunk " + std::to_string(i) + " {segment " + std::to_string(c.segment) + ", tokens [" +
                             std::to_string(c.token_begin) + ", " + std::to_string(c.token_end) + ")}";
    if (c.segment < 0 || c.segment >= tree.num_segments()) return fail() << name << ": no such segment";
    const std::vector<int>& below = tree.seqs_below(c.segment);
    if (below.size() < 2) return fail() << name << ": the segment is not shared";
    if (!(0 <= c.token_begin && c.token_begin < c.token_end && c.token_end <= tree.length(c.segment))) {
      return fail() << name << ": token range outside the segment's " << tree.length(c.segment) << " tokens";
    }
    if (c.rows != static_cast<int>(below.size()) * shape.q_len * g) {
      return fail() << name << ": " << c.rows << " rows, expected "
                    << below.size() * shape.q_len * g << " each";
    }
    const long long tokens = c.token_end - c.token_begin;
    if (tokens > kMaxChunkTokens) return fail() << name << ": more tokens than one softmax block holds";
    if (tokens > 16 && tokens * shape.kv_heads * c.rows > chunk_scores) {
      return fail() << name << ": " << tokens * shape.kv_heads * c.rows << " scores, over the bound of " << chunk_scores;
    }
    chunk_ranges[c.segment].push_back({c.token_begin, c.token_end});
    for (int h = 0; h < shape.kv_heads; ++h) {
      for (int r = 0; r < c.rows; ++r) {
        const int row = c.first_row + h * c.rows + r;
        if (row < 0 || row >= rows) return fail() << name << ": row " << row << " outside [0, " << rows << ")";
        if (row_owner[row] != -1) return fail() << name << ": row " << row << " also belongs to item " << row_owner[row];
        row_owner[row] = item_number;
        const int q = s.row_query[row];
        const std::size_t gathered = static_cast<std::size_t>(c.gathered_row) + static_cast<std::size_t>(h) * c.rows + r;
        if (gathered >= s.gather_query.size() || s.gather_query[gathered] != q) {
          return fail() << name << ": row " << row << " (" << query_text(shape, q) << ") is not gathered row " << gathered;
        }
        if (q % shape.q_heads / g != h) return fail() << name << ": row " << row << " is not of KV head " << h;
        if (s.row_leaf[row] != -1) return fail() << name << ": row " << row << " of a shared segment has a row_leaf";
        const long long to = std::min<long long>(c.token_end, s.row_limit[row]);
        if (c.token_begin < to) attended[q].push_back({c.segment, c.token_begin, to});
      }
    }
  }
  for (auto& [segment, ranges] : chunk_ranges) {
    std::sort(ranges.begin(), ranges.end());
    int end = 0;
    for (const auto& [b, e] : ranges) {
      if (b != end) return fail() << "the GEMM chunks of segment " << segment << " do not tile it at token " << end;
      end = e;
    }
  }
  for (int r = 0; r < rows; ++r) {
    if (row_owner[r] == -1) return fail() << "row " << r << " belongs to no item";
  }

  // Row blocks: all rows of a token list go into ceil(rows / max_rows) blocks per KV head, and each
  // block's split parts tile its whole token list (no split at all with one slot and a target of one
  // block; otherwise no part shorter than kMinSplitTokens unless the block is not split, and at most
  // kMaxSplits).
  for (const auto& [key, by_block] : blocks) {
    const auto& [kv_head, list, seq] = key;
    const long long list_rows = static_cast<long long>(seq >= 0 ? 1 : tree.seqs_below(list.front()).size()) * shape.q_len * g;
    long long list_tokens = 0;
    for (int segment : list) list_tokens += tree.length(segment);
    long long rows_seen = 0;
    for (const auto& [first_query, rows_of_block] : block_rows.at(key)) rows_seen += rows_of_block;
    const std::string name = "token list " + list_text(list) + " (KV head " + std::to_string(kv_head) +
                             (seq >= 0 ? ", sequence " + std::to_string(seq) : std::string()) + ")";
    if (rows_seen != list_rows) return fail() << name << " has " << rows_seen << " rows in its blocks, expected " << list_rows;
    if (static_cast<long long>(by_block.size()) != ceil_div(list_rows, cuts.max_rows)) {
      return fail() << name << ": " << list_rows << " rows in " << by_block.size() << " blocks, expected ceil(rows / "
                    << cuts.max_rows << ") = " << ceil_div(list_rows, cuts.max_rows);
    }
    for (auto [first_query, parts] : by_block) {
      std::sort(parts.begin(), parts.end());
      long long end = 0;
      for (const auto& [b, e] : parts) {
        if (b != end) return fail() << name << ", block from " << query_text(shape, first_query) << ": split parts do not tile the list at token " << end;
        end = e;
        if (parts.size() > 1 && e - b < kMinSplitTokens) {
          return fail() << name << ": split part [" << b << ", " << e << ") is shorter than kMinSplitTokens = " << kMinSplitTokens;
        }
      }
      if (end != list_tokens) return fail() << name << ": split parts end at " << end << " of " << list_tokens << " tokens";
      if (parts.size() > kMaxSplits) return fail() << name << ": split into " << parts.size() << " parts, more than kMaxSplits";
      if (cuts.narrow_slots == 1 && cuts.wide_target_blocks == 1 && parts.size() != 1) {
        return fail() << name << ": split into " << parts.size() << " parts although one block is the target";
      }
    }
  }

  // Merge lists: each query combines exactly its own rows, ascending; a query whose path is empty has
  // none (its causal limit alone may leave a query no token: its rows then say LSE = -inf). The merge
  // kernel runs when some query has other than one.
  if (s.merge_offsets.size() != static_cast<std::size_t>(queries) + 1 || s.merge_offsets.front() != 0 ||
      s.merge_offsets.back() != static_cast<int>(s.merge_rows.size())) {
    return fail() << "merge_offsets has " << s.merge_offsets.size() << " entries (expected " << queries + 1
                  << ") and must run from 0 to the " << s.merge_rows.size() << " merge_rows";
  }
  std::vector<std::vector<int>> rows_of(queries);
  for (int r = 0; r < rows; ++r) rows_of[s.row_query[r]].push_back(r);
  for (int q = 0; q < queries; ++q) {
    const int b = s.merge_offsets[q], e = s.merge_offsets[q + 1];
    const bool empty_path = tree.path_length(q / shape.q_heads / shape.q_len) == 0;
    if (empty_path != (b == e)) {
      return fail() << query_text(shape, q) << (empty_path ? " has an empty path but partial rows (the merge writes its identity)" : " has no partial row");
    }
    const std::vector<int> listed(s.merge_rows.begin() + b, s.merge_rows.begin() + e);
    if (listed != rows_of[q]) {
      return fail() << query_text(shape, q) << " merges rows " << list_text(listed) << " but its rows are " << list_text(rows_of[q]);
    }
  }
  const bool single = std::all_of(rows_of.begin(), rows_of.end(), [](const std::vector<int>& r) { return r.size() == 1; });
  if (s.needs_merge() == single) return fail() << "needs_merge() is " << s.needs_merge() << " but every query has one row: " << single;
  // The leaves may fold the merge when every query has rows, each of several has one narrow row,
  // and its other rows number at most kFoldRounds: half that where a lane holds two narrow rows (the
  // rows product in an item of more than 8 rows; token_warps' lanes hold one).
  std::vector<int> item_rows(static_cast<std::size_t>(rows), 0);
  for (const WorkItem& it : s.narrow_items) {
    for (int r = it.first_row; r < it.first_row + it.num_rows; ++r) item_rows[r] = it.num_rows;
  }
  for (ItemKernel kernel : {ItemKernel::token_warps, ItemKernel::item_warps}) {
    bool foldable = !s.narrow_items.empty() && !s.wide_items.empty();
    for (const std::vector<int>& r : rows_of) {
      int narrow = 0, per_lane = 1;
      for (int row : r) {
        narrow += item_rows[row] > 0;
        if (kernel != ItemKernel::token_warps && item_rows[row] > 8) per_lane = 2;
      }
      const int rounds = (static_cast<int>(r.size()) - 1) * per_lane;
      if (r.empty() || (r.size() > 1 && (narrow != 1 || rounds > kFoldRounds))) foldable = false;
    }
    if (s.narrow_rows_fold(kFoldRounds, kernel) != foldable) {
      return fail() << "narrow_rows_fold(kFoldRounds, " << kernel_name(kernel) << ") is "
                    << s.narrow_rows_fold(kFoldRounds, kernel) << ", the rows say " << foldable;
    }
  }

  // Coverage: every token of the query's path, except the causal tail of its leaf, exactly once.
  for (int q = 0; q < queries; ++q) {
    const int qi = q / shape.q_heads % shape.q_len, seq = q / shape.q_heads / shape.q_len;
    std::map<int, long long> expected;  // segment -> tokens [0, n) attended
    for (int segment : tree.path(seq)) {
      // The causal rule, written out: the leaf hides its last q_len - 1 - qi tokens from query qi.
      const long long n = tree.length(segment) - (segment == tree.leaf(seq) ? shape.q_len - 1 - qi : 0);
      if (n > 0) expected[segment] = n;
    }
    std::vector<Run>& runs = attended[q];
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return std::tie(a.segment, a.from) < std::tie(b.segment, b.from); });
    std::map<int, long long> reached;  // segment -> end of the tokens attended so far
    for (const Run& run : runs) {
      const auto want = expected.find(run.segment);
      if (want == expected.end()) {
        return fail() << query_text(shape, q) << " attends tokens [" << run.from << ", " << run.to << ") of segment "
                      << run.segment << ", which it must not see (path " << list_text(tree.path(seq)) << ")";
      }
      long long& end = reached[run.segment];
      if (run.from < end) {
        return fail() << query_text(shape, q) << " attends token " << run.from << " of segment " << run.segment << " twice";
      }
      if (run.from > end) {
        return fail() << query_text(shape, q) << " never attends token " << end << " of segment " << run.segment;
      }
      if (run.to > want->second) {
        return fail() << query_text(shape, q) << " attends token " << want->second << " of segment " << run.segment
                      << ", past the " << want->second << " tokens it may see";
      }
      end = run.to;
    }
    for (const auto& [segment, n] : expected) {
      const long long end = reached.count(segment) ? reached.at(segment) : 0;
      if (end != n) return fail() << query_text(shape, q) << " never attends token " << end << " of segment " << segment;
    }
  }
  return ::testing::AssertionSuccess();
}

// {narrow target, max rows, wide target}: the simulator's "no split" rule needs equal targets at 1.
const Cuts kCuts[] = {cuts_of(1, kNarrowRows, 1),     cuts_of(1, kMma64Rows, 1),     cuts_of(1, kWgmmaRows, 1),
                      cuts_of(8, kNarrowRows, 8),     cuts_of(8, kMma64Rows, 8),     cuts_of(8, kWgmmaRows, 8),
                      cuts_of(528, kNarrowRows, 528), cuts_of(528, kMma64Rows, 528), cuts_of(1188, kWgmmaRows, 132)};

// Every kind of schedule under every set of cuts (cuda-hydragen's with inline=auto and never), and
// the whole plans an H100 makes (each backend's default, cuda-hydragen's leaves=beside); returns how
// many schedules were replayed.
long long check_all_options(const AttentionShape& shape, const SharingTree& tree, long long chunk_scores = kTestChunkScores) {
  long long replayed = 0;
  for (const Cuts& each : kCuts) {
    for (Kind kind : kKinds) {
      for (const char* inline_option : {"auto", "never"}) {
        if (kind != Kind::segment && std::string(inline_option) == "never") continue;  // only cuda-hydragen's reads it
        Cuts cuts = each;
        cuts.inline_option = inline_option;
        const Schedule s = make_schedule(kind, shape, tree, cuts, chunk_scores);
        EXPECT_TRUE(check_schedule(kind, shape, tree, cuts, s, chunk_scores));
        ++replayed;
      }
    }
  }
  const Planned flat = plan_flash(shape, tree, flash(), kH100);
  EXPECT_TRUE(check_schedule(Kind::flat, shape, tree, cuts_of(flat), flat.schedule));
  for (const char* asked : {"", "leaves=beside"}) {
    const Planned segment = plan_hydragen(shape, tree, hydragen(asked), kH100);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(segment), segment.schedule)) << asked;
  }
  const Planned gemm = plan_hydragen_cublas(shape, tree, kH100);
  EXPECT_TRUE(check_schedule(Kind::gemm, shape, tree, cuts_of(gemm, "never"), gemm.schedule, kMaxChunkScores));
  return replayed + 4;
}

// ---- random problems ----------------------------------------------------------------------------

using Rng = std::mt19937_64;

int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Ragged: a fifth empty, many short, some a few hundred tokens, a few long enough to be split.
int draw_length(Rng& rng) {
  const int r = uniform(rng, 0, 99);
  if (r < 20) return 0;
  if (r < 55) return uniform(rng, 1, 32);
  if (r < 90) return uniform(rng, 33, 300);
  return uniform(rng, 301, 2500);
}

int draw_leaf(Rng& rng, int min_leaf) { return std::max(min_leaf, draw_length(rng)); }

std::vector<int> draw_leaves(Rng& rng, int count, int min_leaf) {
  std::vector<int> lengths;
  for (int i = 0; i < count; ++i) lengths.push_back(draw_leaf(rng, min_leaf));
  return lengths;
}

// A forest of depth up to 3 with uneven fan-out (a node may be a leaf at any depth), one or two
// roots, and segment indices shuffled so that parents may come after their children.
SharingTree random_forest(Rng& rng, int min_leaf) {
  std::vector<int> parents, lengths;
  std::vector<std::vector<int>> children;
  const std::function<void(int, int)> grow = [&](int parent, int depth) {
    const int node = static_cast<int>(parents.size());
    parents.push_back(parent);
    lengths.push_back(draw_length(rng));
    children.emplace_back();
    if (parent >= 0) children[parent].push_back(node);
    const int max_fan = depth == 1 ? 5 : depth == 2 ? 4 : 0;
    const int fan = depth == 1 ? uniform(rng, 1, max_fan) : uniform(rng, 0, max_fan);
    for (int c = 0; c < fan; ++c) grow(node, depth + 1);
  };
  const int roots = uniform(rng, 0, 3) == 0 ? 2 : 1;
  for (int r = 0; r < roots; ++r) grow(-1, 1);
  const int n = static_cast<int>(parents.size());
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int> new_parents(n), new_lengths(n), leaves;
  for (int i = 0; i < n; ++i) {
    new_parents[perm[i]] = parents[i] < 0 ? -1 : perm[parents[i]];
    new_lengths[perm[i]] = children[i].empty() ? std::max(min_leaf, lengths[i]) : lengths[i];
    if (children[i].empty()) leaves.push_back(perm[i]);
  }
  std::shuffle(leaves.begin(), leaves.end(), rng);
  return SharingTree::from_parents(new_parents, new_lengths, leaves);
}

SharingTree random_prefix_suffix(Rng& rng, int min_leaf) {
  const int r = uniform(rng, 0, 3);
  const int prefix = r == 0 ? 0 : r == 1 ? 1 : r == 2 ? draw_length(rng) : uniform(rng, 2000, 9000);
  return SharingTree::prefix_suffix(prefix, draw_leaves(rng, uniform(rng, 1, 24), min_leaf));
}

SharingTree random_two_level(Rng& rng, int min_leaf) {
  const int groups = uniform(rng, 1, 4);
  std::vector<int> group_lens;
  std::vector<std::vector<int>> suffixes;
  for (int i = 0; i < groups; ++i) {
    group_lens.push_back(draw_length(rng));
    suffixes.push_back(draw_leaves(rng, uniform(rng, 1, 5), min_leaf));
  }
  return SharingTree::two_level(draw_length(rng), group_lens, suffixes);
}

SharingTree random_flat(Rng& rng, int min_leaf) { return SharingTree::flat(draw_leaves(rng, uniform(rng, 1, 10), min_leaf)); }

// (Hq, Hkv): g = 1 (MHA), 4 and 8 (GQA) and MQA, Hkv 1..4.
constexpr std::pair<int, int> kHeads[] = {{1, 1}, {3, 3},  {4, 4},  {4, 1},  {8, 1},  {16, 1},
                                          {8, 2}, {16, 2}, {12, 3}, {16, 4}, {32, 4}, {2, 2}};

// Trees from `make` with q_len 1 and 4 (leaves >= 3 tokens), each under four random head layouts,
// both schedules, every option set. Stops at the first failing problem.
void sweep(std::uint64_t seed, int trees, const std::function<SharingTree(Rng&, int)>& make) {
  Rng rng(seed);
  long long replayed = 0, problems = 0;
  for (int t = 0; t < trees && !::testing::Test::HasFailure(); ++t) {
    for (int q_len : {1, 4}) {
      const SharingTree tree = make(rng, q_len - 1);
      std::vector<std::pair<int, int>> heads(std::begin(kHeads), std::end(kHeads));
      std::shuffle(heads.begin(), heads.end(), rng);
      for (int k = 0; k < 4 && !::testing::Test::HasFailure(); ++k) {
        const AttentionShape shape = make_shape(tree.num_seqs(), q_len, heads[k].first, heads[k].second, 64, DType::bf16);
        replayed += check_all_options(shape, tree);
        ++problems;
      }
    }
  }
  std::printf("[ simulated] %lld problems, %lld schedules replayed\n", problems, replayed);
  ::testing::Test::RecordProperty("problems", static_cast<int>(problems));
  ::testing::Test::RecordProperty("schedules", static_cast<int>(replayed));
}

TEST(BothSchedules, EveryQueryAttendsEachTokenOfItsPathOnceInRandomDepth3Forests) { sweep(11, 60, random_forest); }
TEST(BothSchedules, EveryQueryAttendsEachTokenOfItsPathOnceInRandomPrefixSuffixTrees) { sweep(12, 60, random_prefix_suffix); }
TEST(BothSchedules, EveryQueryAttendsEachTokenOfItsPathOnceInRandomTwoLevelTrees) { sweep(13, 60, random_two_level); }
TEST(BothSchedules, EveryQueryAttendsEachTokenOfItsPathOnceInRandomFlatBatches) { sweep(14, 40, random_flat); }

// ---- the rules one at a time --------------------------------------------------------------------

TEST(BothSchedules, HideTheCausalTailOfTheLeafAndNothingElse) {
  // Prefix of 5, leaf of 3 = q_len - 1: query qi sees the prefix and the first qi tokens of its leaf.
  const SharingTree tree = SharingTree::prefix_suffix(5, {3});
  const AttentionShape shape = make_shape(1, 4, 1, 1, 64, DType::bf16);
  for (Kind kind : {Kind::flat, Kind::segment}) {
    SCOPED_TRACE(kind_name(kind));
    const Cuts cuts = segments_apart(cuts_of(1, kMma64Rows, 1));
    const Schedule s = make_schedule(kind, shape, tree, cuts);
    EXPECT_TRUE(check_schedule(kind, shape, tree, cuts, s));
    ASSERT_EQ(s.num_rows(), kind == Kind::flat ? 4 : 8);
    // flat: one list prefix + leaf (8 tokens); segment: the prefix's 4 rows, then the leaf's 4 rows.
    const std::vector<int> want = kind == Kind::flat ? std::vector<int>{5, 6, 7, 8} : std::vector<int>{5, 5, 5, 5, 0, 1, 2, 3};
    EXPECT_EQ(s.row_limit, want);
  }
}

TEST(BothSchedules, LeaveAQueryWhosePathIsEmptyToTheMerge) {
  // Sequence 0's path is two empty segments; sequence 1 has 5 tokens. Items all have tokens, so
  // sequence 0's queries get no row, and the merge (which must run) writes their identity.
  const SharingTree tree = SharingTree::from_parents({-1, 0, -1}, {0, 0, 5}, {1, 2});
  const AttentionShape shape = make_shape(2, 1, 4, 1, 64, DType::bf16);
  check_all_options(shape, tree);
  for (const Planned& p : {plan_flash(shape, tree, flash(), kH100), plan_hydragen(shape, tree, hydragen(), kH100)}) {
    const Schedule& s = p.schedule;
    for (int q = 0; q < 8; ++q) EXPECT_EQ(s.merge_offsets[q + 1] - s.merge_offsets[q], q < 4 ? 0 : 1) << "query " << q;
    EXPECT_TRUE(s.needs_merge());
    EXPECT_TRUE(p.decisions.launches.run_merge) << decision_of(p, "merge").reason;
  }
}

TEST(BothSchedules, SkipTheMergeWhenEveryQueryHasOneRow) {
  const SharingTree tree = SharingTree::prefix_suffix(300, {40, 40});
  const AttentionShape shape = make_shape(2, 1, 8, 1, 64, DType::bf16);
  const DeviceLimits eight_sms{8, false, false, "an 8-SM test device"};  // 2 paths x 1 KV head: a quarter of 8 SMs
  const Planned flat = plan_flash(shape, tree, flash(), eight_sms);
  EXPECT_FALSE(flat.schedule.needs_merge()) << "one item per sequence";
  EXPECT_FALSE(flat.decisions.launches.run_merge);
  const Planned inlined = plan_hydragen(shape, tree, hydragen(), eight_sms);
  EXPECT_TRUE(inlined.decisions.inline_paths);
  EXPECT_FALSE(inlined.schedule.needs_merge()) << "2 x 8 rows over the prefix: read in each item";
  EXPECT_FALSE(inlined.decisions.launches.run_merge);
  const Planned apart = plan_hydragen(shape, tree, hydragen("inline=never"), eight_sms);
  EXPECT_TRUE(apart.schedule.needs_merge()) << "prefix and suffix partials";
  EXPECT_TRUE(apart.decisions.launches.run_merge);
}

TEST(BothSchedules, RefuseALeafTooShortForTheCausalQueries) {
  const SharingTree tree = SharingTree::prefix_suffix(10, {2});  // q_len 4 needs a leaf of >= 3
  const AttentionShape shape = make_shape(1, 4, 4, 1, 64, DType::bf16);
  EXPECT_THROW(plan_flash(shape, tree, flash(), kH100), std::invalid_argument);
  EXPECT_THROW(plan_hydragen(shape, tree, hydragen(), kH100), std::invalid_argument);
  EXPECT_THROW(plan_hydragen_cublas(shape, tree, kH100), std::invalid_argument);
}

TEST(BothSchedules, BuildCutsOnlyTheRowBlocksOfItsChoices) {
  const AttentionShape shape = make_shape(4, 1, 8, 1, 128, DType::bf16);
  const std::vector<Group> groups = segment_groups(shape, SharingTree::prefix_suffix(1024, {64, 64, 64, 64}), false);
  const BlockCensus narrow = census(shape, groups, kNarrowRows);
  EXPECT_EQ(build(shape, groups, narrow, BuildChoices{kNarrowRows, 1, 1, 0, 0}).narrow_items.size(), narrow.blocks.size());
  try {
    build(shape, groups, narrow, BuildChoices{kWgmmaRows, 1, 1, 0, 0});
    ADD_FAILURE() << "built from a census of another cut";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("row blocks of 16 rows, the choices 128"), std::string::npos) << e.what();
  }
}

// A chain of 70 segments (some empty) with a second sequence branching off at depth 40.
SharingTree deep_chain() {
  std::vector<int> parents, lengths;
  for (int i = 0; i < 70; ++i) {
    parents.push_back(i - 1);
    lengths.push_back(i % 7 == 3 ? 0 : 1 + (i * 13) % 40);
  }
  parents.push_back(39);  // segment 70: the branch's leaf
  lengths.push_back(9);
  return SharingTree::from_parents(parents, lengths, {69, 70});
}

TEST(FlashSchedule, CutsAPathDeeperThanKMaxItemSegmentsIntoSeveralItems) {
  const SharingTree tree = deep_chain();
  ASSERT_GT(tree.depth(), 2 * kMaxItemSegments);
  for (int q_len : {1, 4}) {
    const AttentionShape shape = make_shape(2, q_len, 8, 2, 64, DType::bf16);
    check_all_options(shape, tree);
    const Schedule s = make_schedule(Kind::flat, shape, tree, cuts_of(1, kMma64Rows, 1));
    // Sequence 0's 70 segments need ceil(70 / 32) = 3 token lists per KV head.
    int lists_of_seq0 = 0;
    for (const auto* items : {&s.narrow_items, &s.wide_items}) {
      for (const WorkItem& it : *items) {
        EXPECT_LE(it.num_segments, kMaxItemSegments);
        if (it.kv_head == 0 && s.row_query[it.first_row] / shape.q_heads / q_len == 0) ++lists_of_seq0;
      }
    }
    EXPECT_EQ(lists_of_seq0, 3) << "q_len " << q_len;
  }
}

TEST(SegmentSchedule, HandlesAPathDeeperThanKMaxItemSegments) {
  const SharingTree tree = deep_chain();
  for (int q_len : {1, 4}) check_all_options(make_shape(2, q_len, 4, 4, 64, DType::bf16), tree);
}

// Items whose token list contains `segment`.
std::vector<WorkItem> items_over(const Schedule& s, int segment) {
  std::vector<WorkItem> out;
  for (const auto* items : {&s.narrow_items, &s.wide_items}) {
    for (const WorkItem& it : *items) {
      const auto b = s.item_segments.begin() + it.first_segment;
      if (std::find(b, b + it.num_segments, segment) != b + it.num_segments) out.push_back(it);
    }
  }
  return out;
}

// n one-row items of `tokens` tokens each, as rules read them (their lengths): the leaves of a decode step.
std::vector<long long> leaves(int n, long long tokens) { return std::vector<long long>(static_cast<std::size_t>(n), tokens); }

// Rule launch_workers for a launch of 16-row blocks on the H100 (396 resident, one item each).
int narrow_workers(const std::vector<long long>& items) {
  return launch_workers("narrow", "auto", ItemKernel::token_warps, DType::bf16, items, 0, 0, kH100).choice;
}

TEST(LaunchWorkers, PersistentOnlyForManyShortItems) {
  const int slots = 396;  // 3 blocks on each of 132 SMs: persistent workers are as many
  EXPECT_EQ(narrow_workers(leaves(8192, 64)), slots) << "MHA (256, 8192, 64): 8192 one-tile leaves";
  EXPECT_EQ(narrow_workers(leaves(1024, 64)), 1024) << "(1024, 16384, 64): under 8 blocks' worth per slot";
  EXPECT_EQ(narrow_workers(leaves(4096, 1088)), 4096) << "cuda-flash B = 4096: long paths";
  EXPECT_EQ(narrow_workers(leaves(8 * slots, 128)), slots) << "the limits themselves";
  EXPECT_EQ(narrow_workers(leaves(8 * slots - 1, 64)), 8 * slots - 1);
  EXPECT_EQ(narrow_workers(leaves(8 * slots, 129)), 8 * slots);
}

// Rule narrow_product: the token product for the warp kernels' items of at most 4 rows where the
// leaves do not fold; the option forces either (tokens up to 8 rows), and falls back to rows where it
// cannot apply.
TEST(NarrowProduct, TokensForWarpKernelItemsOfAtMostFourRowsThatDoNotFold) {
  const AttentionShape mha5 = make_shape(1024, 1, 5, 5, 128, DType::bf16);
  const Planned decoder = plan_hydragen(mha5, SharingTree::prefix_suffix(1024, std::vector<int>(1024, 64)), hydragen(), kH100);
  ASSERT_EQ(decoder.decisions.narrow_kernel, ItemKernel::item_warps);
  ASSERT_FALSE(decoder.decisions.launches.folds());
  EXPECT_EQ(decoder.decisions.launches.narrow_product, NarrowProduct::tokens) << "one-row leaves chained after the wgmma launch";
  const Planned beside = plan_hydragen(mha5, SharingTree::prefix_suffix(4096, std::vector<int>(1024, 32)), hydragen(), kH100);
  ASSERT_EQ(beside.decisions.narrow_kernel, ItemKernel::sm_item_warps);
  EXPECT_EQ(beside.decisions.launches.narrow_product, NarrowProduct::tokens) << "the leaves' whole-SM warps";
  // MQA (g = 8) beside a wgmma launch: rows under auto, tokens when asked.
  const AttentionShape mqa1024 = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree mqa_beside = SharingTree::prefix_suffix(2048, std::vector<int>(1024, 256));
  const Planned eight = plan_hydragen(mqa1024, mqa_beside, hydragen(), kH100);
  ASSERT_FALSE(eight.decisions.launches.folds());
  ASSERT_EQ(eight.decisions.narrow_kernel, ItemKernel::sm_item_warps);
  EXPECT_EQ(eight.decisions.launches.narrow_product, NarrowProduct::rows);
  EXPECT_EQ(plan_hydragen(mqa1024, mqa_beside, hydragen("narrow_product=tokens"), kH100).decisions.launches.narrow_product,
            NarrowProduct::tokens);
  // Leaves that fold their queries' wide rows keep the rows product, unless asked.
  const SharingTree folds = SharingTree::prefix_suffix(2048, std::vector<int>(256, 64));
  const AttentionShape mqa = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const Planned folded = plan_hydragen(mqa, folds, hydragen(), kH100);
  ASSERT_TRUE(folded.decisions.launches.folds());
  EXPECT_EQ(folded.decisions.launches.narrow_product, NarrowProduct::rows);
  EXPECT_EQ(plan_hydragen(mqa, folds, hydragen("narrow_product=tokens"), kH100).decisions.launches.narrow_product,
            NarrowProduct::tokens);
  EXPECT_EQ(plan_hydragen(mha5, SharingTree::prefix_suffix(1024, std::vector<int>(1024, 64)), hydragen("narrow_product=rows"), kH100)
                .decisions.launches.narrow_product,
            NarrowProduct::rows);
  // Items of 16 rows (q_len 2 at g = 8), or the token-warp kernel: rows, saying why.
  const Ruled<NarrowProduct> sixteen =
      narrow_product("tokens", ItemKernel::item_warps, false,
                     plan_hydragen(make_shape(64, 2, 8, 1, 128, DType::bf16), SharingTree::prefix_suffix(1024, std::vector<int>(64, 64)),
                                   hydragen("form=wide:narrow_kernel=item_warps"), kH100)
                         .schedule);
  EXPECT_EQ(sixteen.choice, NarrowProduct::rows);
  EXPECT_NE(sixteen.decision.reason.find("16 rows"), std::string::npos) << sixteen.decision.reason;
  EXPECT_EQ(narrow_product("auto", ItemKernel::token_warps, false, decoder.schedule).choice, NarrowProduct::rows);
}

TEST(LaunchWorkers, TheOptionFixesTheChoiceForMmaSyncLaunchesOnly) {
  const int slots = 396;
  auto narrow = [](const char* option, ItemKernel kernel, const std::vector<long long>& items, int leaf_sms = 0) {
    return launch_workers("narrow", option, kernel, DType::bf16, items, leaf_sms, 0, kH100);
  };
  EXPECT_EQ(narrow("resident", ItemKernel::token_warps, leaves(1024, 64)).choice, slots) << "fewer items per slot than auto asks";
  EXPECT_EQ(narrow("resident", ItemKernel::token_warps, leaves(100, 64)).choice, 100) << "never more workers than items";
  EXPECT_EQ(narrow("resident", ItemKernel::item_warps, leaves(5120, 16)).choice, slots * kItemWarps);
  EXPECT_EQ(narrow("items", ItemKernel::token_warps, leaves(8192, 64)).choice, 8192) << "auto would be persistent";
  EXPECT_EQ(narrow("resident", ItemKernel::sm_item_warps, leaves(5120, 64), 32).choice, 32 * kSmWarps) << "beside: the leaf SMs' warps";
  EXPECT_EQ(launch_workers("narrow", "resident", ItemKernel::simt, DType::fp32, leaves(8192, 64), 0, 0, kH100).choice, 8192);
  const Ruled<int> fixed = narrow("resident", ItemKernel::token_warps, leaves(1024, 64));
  EXPECT_NE(fixed.decision.reason.find("narrow_workers=resident"), std::string::npos) << fixed.decision.reason;
}

TEST(LaunchWorkers, NeverPersistentForWgmmaBlocksOrFp32) {
  // Only the mma.sync kernels run persistent workers; dealt wgmma runs are the runs.
  EXPECT_EQ(launch_workers("wide", "auto", ItemKernel::wgmma, DType::bf16, leaves(8192, 64), 0, 0, kH100).choice, 8192);
  EXPECT_EQ(launch_workers("narrow", "auto", ItemKernel::simt, DType::fp32, leaves(8192, 64), 0, 0, kH100).choice, 8192);
  EXPECT_EQ(launch_workers("wide", "auto", ItemKernel::wgmma, DType::bf16, leaves(200, 3251), 0, 100, kH100).choice, 100);
  // Whole-SM leaf warps: twelve per leaf SM, at most one per item.
  EXPECT_EQ(launch_workers("narrow", "auto", ItemKernel::sm_item_warps, DType::bf16, leaves(5120, 64), 32, 0, kH100).choice, 32 * kSmWarps);
  EXPECT_EQ(launch_workers("narrow", "auto", ItemKernel::sm_item_warps, DType::bf16, leaves(100, 64), 32, 0, kH100).choice, 100);
}

// Rule narrow_kernel under narrow_kernel=auto on the H100 (396 resident narrow blocks).
ItemKernel narrow_kernel_of(const std::vector<long long>& items, bool alone) {
  return narrow_kernel(DType::bf16, "auto", 0, items, alone, kH100).choice;
}

TEST(NarrowKernel, AWarpPerItemForManyShortItems) {
  EXPECT_EQ(narrow_kernel_of(leaves(5120, 8), false), ItemKernel::item_warps) << "CodeLlama-13b's decode leaves, 5 heads x 1024";
  EXPECT_EQ(narrow_kernel_of(leaves(256, 64), false), ItemKernel::item_warps) << "(256, P, 64), g = 8: one leaf per sequence";
  EXPECT_EQ(narrow_kernel_of(leaves(4096, 192), false), ItemKernel::item_warps) << "three tiles each, ten times the slots";
  // Fewer items than SMs: each finishes sooner with its tiles over four warps.
  EXPECT_EQ(narrow_kernel_of(leaves(32, 64), false), ItemKernel::token_warps) << "(32, P, 64), g = 8";
  EXPECT_EQ(narrow_kernel_of(leaves(131, 64), false), ItemKernel::token_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(132, 64), false), ItemKernel::item_warps) << "one per SM";
  // Longer items stream better in 64-token tiles, unless narrow blocks would each run several.
  EXPECT_EQ(narrow_kernel_of(leaves(256, 65), false), ItemKernel::token_warps) << "over a tile, fewer items than slots";
  EXPECT_EQ(narrow_kernel_of(leaves(128, 128), false), ItemKernel::token_warps) << "(128, P, 128), g = 8";
  EXPECT_EQ(narrow_kernel_of(leaves(512, 128), false), ItemKernel::item_warps) << "(512, P, 128), g = 8";
  EXPECT_EQ(narrow_kernel_of(leaves(256, 256), false), ItemKernel::token_warps) << "four tiles, fewer items than slots";
  EXPECT_EQ(narrow_kernel_of(leaves(396, 192), false), ItemKernel::token_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(397, 192), false), ItemKernel::item_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(4096, 193), false), ItemKernel::token_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 256), false), ItemKernel::token_warps) << "(512, P, 512)'s leaves split in two";
  // Between one and two waves of blocks: one wave of warps, up to eight tiles.
  EXPECT_EQ(narrow_kernel_of(leaves(512, 240), false), ItemKernel::item_warps) << "(512, P, 240), g = 8";
  EXPECT_EQ(narrow_kernel_of(leaves(512, 496), false), ItemKernel::item_warps) << "(512, P, 496), g = 8";
  EXPECT_EQ(narrow_kernel_of(leaves(512, 513), false), ItemKernel::token_warps) << "over eight tiles";
  EXPECT_EQ(narrow_kernel_of(leaves(791, 512), false), ItemKernel::item_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(792, 512), false), ItemKernel::token_warps) << "two whole waves of blocks";
  EXPECT_EQ(narrow_kernel_of(leaves(512, 1088), true), ItemKernel::token_warps) << "cuda-flash's paths";
  EXPECT_EQ(narrow_kernel_of({}, false), ItemKernel::token_warps) << "no narrow launch";
}

TEST(NarrowKernel, AloneOneWaveOfWarpsForTwoToFourWavesOfBlocks) {
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 544), true), ItemKernel::item_warps) << "cuda-flash (512, 1024, 64): paths split in two";
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 544), false), ItemKernel::token_warps) << "beside a wide launch";
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 1152), true), ItemKernel::item_warps) << "18 tiles";
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 1153), true), ItemKernel::token_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(1024, 2080), true), ItemKernel::token_warps) << "cuda-flash (512, 4096, 64)";
  EXPECT_EQ(narrow_kernel_of(leaves(792, 1088), true), ItemKernel::token_warps) << "two whole waves of blocks";
  EXPECT_EQ(narrow_kernel_of(leaves(793, 1088), true), ItemKernel::item_warps);
  EXPECT_EQ(narrow_kernel_of(leaves(1584, 1088), true), ItemKernel::item_warps) << "one whole wave of warps";
  EXPECT_EQ(narrow_kernel_of(leaves(1585, 1088), true), ItemKernel::token_warps);
}

TEST(NarrowKernel, TakesTheOptionFp32AndLeavesBesideBeforeItsThresholds) {
  // 5120 one-tile leaves would be warps under auto.
  EXPECT_EQ(narrow_kernel(DType::bf16, "token_warps", 0, leaves(5120, 8), false, kH100).choice, ItemKernel::token_warps);
  EXPECT_EQ(narrow_kernel(DType::bf16, "item_warps", 0, leaves(32, 1024), false, kH100).choice, ItemKernel::item_warps);
  EXPECT_EQ(narrow_kernel(DType::fp32, "item_warps", 0, leaves(5120, 8), false, kH100).choice, ItemKernel::simt) << "CUDA cores only";
  EXPECT_EQ(narrow_kernel(DType::bf16, "token_warps", 12, leaves(32, 1024), false, kH100).choice, ItemKernel::sm_item_warps)
      << "leaves on SMs of their own";
}

TEST(SegmentSchedule, SplitABlockIntoAtMostKMaxSplitsParts) {
  // B = 32, g = 8: two 128-row blocks over the prefix; 66 parts each would fill 132 SMs, but the
  // merge folds 32 partials per round.
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(32, 64));
  const AttentionShape shape = make_shape(32, 1, 8, 1, 128, DType::bf16);
  const Cuts cuts = cuts_of(1188, kWgmmaRows, 132);
  const Schedule s = make_schedule(Kind::segment, shape, tree, cuts);
  EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts, s));
  const std::vector<WorkItem> over_prefix = items_over(s, 0);
  EXPECT_EQ(over_prefix.size(), 2u * kMaxSplits);
  for (const WorkItem& it : over_prefix) EXPECT_EQ(it.token_end - it.token_begin, 16384 / kMaxSplits);
}

TEST(SegmentSchedule, DealsTheWideItemsToPersistentWorkersInTheOrderOfTheirParts) {
  // B = 256, g = 8: 16 row blocks over the prefix, five parts each, dealt to 30 workers: workers
  // 0..9 take three parts, the others two, and each worker's k-th part is a part of about the
  // same index as every other worker's k-th (perf-notes v20: blocks reading a segment at once read
  // about the same tokens).
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(256, 64));
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  Cuts cuts = cuts_of(396, kWgmmaRows, 80);
  const Schedule one_each = make_schedule(Kind::segment, shape, tree, cuts);
  cuts.wide_workers = 30;
  const Schedule s = make_schedule(Kind::segment, shape, tree, cuts);
  EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts, s));
  ASSERT_EQ(s.wide_items.size(), 80u);
  ASSERT_EQ(s.wide_worker_items.size(), 31u);
  EXPECT_TRUE(one_each.wide_worker_items.empty()) << "a block per item unless workers are asked for";
  auto key = [](const WorkItem& it) { return std::tuple(it.kv_head, it.first_row, it.token_begin, it.token_end); };
  std::vector<std::tuple<int, int, int, int>> dealt, cut;
  for (const WorkItem& it : s.wide_items) dealt.push_back(key(it));
  for (const WorkItem& it : one_each.wide_items) cut.push_back(key(it));
  std::sort(dealt.begin(), dealt.end());
  std::sort(cut.begin(), cut.end());
  EXPECT_EQ(dealt, cut) << "the same items, only dealt";
  for (int w = 0; w < 30; ++w) {
    const int first = s.wide_worker_items[w], count = s.wide_worker_items[w + 1] - first;
    EXPECT_EQ(count, w < 20 ? 3 : 2) << "worker " << w;
    for (int k = 0; k < count; ++k) {
      const int part = s.wide_items[first + k].token_begin / (16384 / 5);
      EXPECT_EQ(part, (k * 30 + w) / 16) << "worker " << w << "'s part " << k;
    }
  }
  EXPECT_EQ(s.wide_worker_items.front(), 0);
  EXPECT_EQ(s.wide_worker_items.back(), 80);
}

TEST(SegmentSchedule, DealsToNoMoreWorkersThanItems) {
  const SharingTree tree = SharingTree::prefix_suffix(1024, std::vector<int>(256, 64));
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  Cuts cuts = cuts_of(396, kWgmmaRows, 16);
  cuts.wide_workers = 100;
  const Schedule s = make_schedule(Kind::segment, shape, tree, cuts);
  ASSERT_EQ(s.wide_items.size(), 16u);
  EXPECT_EQ(s.wide_worker_items.size(), 17u) << "one item each";
}

TEST(SegmentSchedule, SplitsWideBlocksByTheirShareOfTheTokensNotByTheirCount) {
  // B = 64, q_len = 4, g = 8 (speculative decoding): 2048 stacked rows over the prefix make 16
  // wgmma blocks, and each leaf's 32 rows a one-tile wide block of its own. Counted as equals, the
  // 80 blocks would share 132 targets and leave the prefix unsplit on 16 SMs; by tokens each prefix
  // block takes floor(16384 * 132 / (16 * 16384 + 64 * 64)) = 8 parts and each leaf one.
  // cuda-hydragen on the H100: a wave of 132 wgmma blocks is the target.
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(64, 64));
  const AttentionShape shape = make_shape(64, 4, 8, 1, 128, DType::bf16);
  const Planned p = plan_hydragen(shape, tree, hydragen(), kH100);
  ASSERT_EQ(p.decisions.build.wide_target_blocks, 132);
  const Schedule& s = p.schedule;
  EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), s));
  const std::vector<WorkItem> over_prefix = items_over(s, 0);
  EXPECT_EQ(over_prefix.size(), 16u * 8);
  for (const WorkItem& it : over_prefix) EXPECT_EQ(it.token_end - it.token_begin, 2048);
  for (int leaf = 1; leaf <= 64; ++leaf) EXPECT_EQ(items_over(s, leaf).size(), 1u) << "leaf " << leaf;
  EXPECT_TRUE(s.narrow_items.empty());
}

TEST(BothSchedules, SplitALongSegmentIntoPartsOfAtLeastKMinSplitTokensWhenTheGridIsUnderFilled) {
  const SharingTree tree = SharingTree::prefix_suffix(8192, {64, 64});
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  for (Kind kind : {Kind::flat, Kind::segment}) {
    SCOPED_TRACE(kind_name(kind));
    const Cuts cuts = segments_apart(cuts_of(528, kMma64Rows, 528));
    const Schedule s = make_schedule(kind, shape, tree, cuts);
    EXPECT_TRUE(check_schedule(kind, shape, tree, cuts, s));
    const std::vector<WorkItem> over_prefix = items_over(s, 0);
    // flat: one block per sequence over its 8256-token path; segment: one block of 16 rows.
    const std::size_t blocks = kind == Kind::flat ? 2 : 1;
    EXPECT_GT(over_prefix.size(), 4 * blocks) << "the prefix is not split";
    for (const WorkItem& it : over_prefix) EXPECT_GE(it.token_end - it.token_begin, kMinSplitTokens);
    if (kind == Kind::segment) {
      // The 64-token suffixes are shorter than kMinSplitTokens: one whole item each.
      for (int leaf : {1, 2}) {
        const std::vector<WorkItem> over_leaf = items_over(s, leaf);
        ASSERT_EQ(over_leaf.size(), 1u) << "leaf " << leaf;
        EXPECT_EQ(over_leaf[0].token_begin, 0);
        EXPECT_EQ(over_leaf[0].token_end, 64);
      }
    }
  }
}

TEST(BothSchedules, DoNotSplitWithOneSlotAndATargetOfOneBlock) {
  const SharingTree tree = SharingTree::prefix_suffix(8192, {64, 64});
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  for (Kind kind : {Kind::flat, Kind::segment}) {
    const Schedule s = make_schedule(kind, shape, tree, segments_apart(cuts_of(1, kMma64Rows, 1)));
    EXPECT_EQ(items_over(s, 0).size(), kind == Kind::flat ? 2u : 1u) << kind_name(kind);
  }
}

// Tokens of `segment` read over all items (with every split part counted once).
long long tokens_read(const Schedule& s, int segment, const SharingTree& tree) {
  long long read = 0;
  for (const WorkItem& it : items_over(s, segment)) {
    long long start = 0;
    for (int k = 0; k < it.num_segments; ++k) {
      const int seg = s.item_segments[it.first_segment + k];
      if (seg == segment) read += std::max(0LL, std::min<long long>(it.token_end, start + tree.length(seg)) - std::max<long long>(it.token_begin, start));
      start += tree.length(seg);
    }
  }
  return read;
}

TEST(SegmentSchedule, ReadsASharedPrefixOncePerRowBlockOfStackedQueriesNotOncePerSequence) {
  struct Row {
    int batch, q_len, q_heads, kv_heads, max_rows;
  };
  const int prefix = 1000;
  for (const Row& c : {Row{100, 1, 8, 2, kMma64Rows}, Row{100, 1, 8, 2, kNarrowRows}, Row{64, 4, 16, 4, kMma64Rows},
                       Row{1024, 1, 8, 1, kMma64Rows}, Row{3, 1, 4, 4, kMma64Rows}, Row{1024, 1, 8, 1, kWgmmaRows}}) {
    const SharingTree tree = SharingTree::prefix_suffix(prefix, std::vector<int>(c.batch, 17));
    const AttentionShape shape = make_shape(c.batch, c.q_len, c.q_heads, c.kv_heads, 64, DType::bf16);
    const Cuts cuts = segments_apart(cuts_of(1, c.max_rows, 1));  // B = 3 at g = 1: 3 rows
    const long long rows = static_cast<long long>(c.batch) * c.q_len * shape.group_size();
    SCOPED_TRACE(shape.describe() + ", max_rows " + std::to_string(c.max_rows));
    const Schedule segments = make_schedule(Kind::segment, shape, tree, cuts);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts, segments));
    const std::vector<WorkItem> over_prefix = items_over(segments, 0);
    EXPECT_EQ(static_cast<long long>(over_prefix.size()), c.kv_heads * ceil_div(rows, c.max_rows));
    long long stacked = 0;
    for (const WorkItem& it : over_prefix) stacked += it.num_rows;
    EXPECT_EQ(stacked, rows * c.kv_heads) << "every query row of every sequence is stacked over the prefix";
    EXPECT_EQ(tokens_read(segments, 0, tree), prefix * c.kv_heads * ceil_div(rows, c.max_rows));
    // cuda-flash reads the prefix once per sequence (and per row block of a sequence's q_len * g rows).
    const Schedule paths = make_schedule(Kind::flat, shape, tree, cuts);
    EXPECT_EQ(tokens_read(paths, 0, tree),
              static_cast<long long>(prefix) * c.kv_heads * c.batch * ceil_div(static_cast<long long>(c.q_len) * shape.group_size(), c.max_rows));
  }
}

TEST(SegmentSchedule, ReadsASegmentOfTooFewReadersForA16RowBlockWithinEachReadersItem) {
  // A 1000-token prefix read by 6 sequences; below it a pair (segment 1) and a group of four
  // (segment 2), 256 tokens each, then a 64-token leaf each.
  const SharingTree tree = SharingTree::from_parents({-1, 0, 0, 1, 1, 2, 2, 2, 2}, {1000, 256, 256, 64, 64, 64, 64, 64, 64},
                                                     {3, 4, 5, 6, 7, 8});
  const Cuts cuts = cuts_of(1, kMma64Rows, 1, 8);
  auto segments_of = [](const Schedule& s, int segment) {
    std::vector<int> counts;
    for (const WorkItem& it : items_over(s, segment)) counts.push_back(it.num_segments);
    return counts;
  };
  {
    // Hq / Hkv = 8: the pair's 16 rows fit one narrow block, the four's 32 and the prefix's 48 do not.
    const AttentionShape shape = make_shape(6, 1, 8, 1, 64, DType::bf16);
    const Schedule s = make_schedule(Kind::segment, shape, tree, cuts);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts, s));
    EXPECT_EQ(segments_of(s, 0), std::vector<int>{1});
    EXPECT_EQ(segments_of(s, 1), (std::vector<int>{2, 2})) << "the pair's segment, then each one's leaf";
    EXPECT_EQ(segments_of(s, 2), std::vector<int>{1});
    EXPECT_EQ(tokens_read(s, 1, tree), 2 * 256);
    const Schedule apart = make_schedule(Kind::segment, shape, tree, segments_apart(cuts));
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, segments_apart(cuts), apart));
    EXPECT_EQ(segments_of(apart, 1), std::vector<int>{1});
    EXPECT_EQ(tokens_read(apart, 1, tree), 256);
    // Six paths (every leaf fits a block) x 1 KV head are under a quarter of 25 SMs: on so idle a GPU
    // a path's split parts would run a tile longer than the segments' own, so they stay apart.
    const Cuts idle = cuts_of(1, kMma64Rows, 1, 25);
    const Schedule few = make_schedule(Kind::segment, shape, tree, idle);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, idle, few));
    EXPECT_EQ(segments_of(few, 1), std::vector<int>{1});
    const Ruled<bool> rule = inline_paths("auto", narrow_paths(shape, tree), shape.kv_heads, device_of(idle));
    EXPECT_FALSE(rule.choice);
    for (const char* input : {"narrow_paths=6", "kv_heads=1", "sms=25"}) {
      EXPECT_NE(rule.decision.inputs.find(input), std::string::npos) << rule.decision.inputs;
    }
  }
  {
    // One row per sequence: even the prefix's 6 fit a block, so every sequence reads its whole path
    // in one item, as cuda-flash does, and no query needs the merge.
    const AttentionShape shape = make_shape(6, 1, 1, 1, 64, DType::bf16);
    const Schedule s = make_schedule(Kind::segment, shape, tree, cuts);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts, s));
    EXPECT_EQ(segments_of(s, 0), std::vector<int>(6, 3));
    EXPECT_FALSE(s.needs_merge());
  }
}

TEST(BothSchedules, CoverTheLargeProblemsOfTheGpuTests) {
  // test_large.cpp's cases, replayed here so that a failure there is not a schedule bug.
  std::vector<int> ragged;
  for (int i = 0; i < 256; ++i) ragged.push_back(3 + (i * 37) % 65);
  // GEMM chunks of the plan's size (rules.hpp: kMaxChunkScores), not the random tests' small ones.
  const long long plan_chunk = kMaxChunkScores;
  check_all_options(make_shape(1024, 1, 8, 1, 128, DType::bf16), SharingTree::prefix_suffix(16384, std::vector<int>(1024, 64)), plan_chunk);
  check_all_options(make_shape(64, 1, 32, 32, 128, DType::bf16), SharingTree::prefix_suffix(8192, std::vector<int>(64, 64)), plan_chunk);
  check_all_options(make_shape(256, 4, 8, 2, 64, DType::bf16), SharingTree::prefix_suffix(4096, ragged), plan_chunk);
}

TEST(SegmentSchedule, ClustersOfPartsShareTheirRowsAndStillAttendEachTokenOnce) {
  for (const char* asked : {"", "part_merge=cluster", "wide_parts=4:part_merge=cluster", "wide_parts=8:part_merge=cluster"}) {
    for (int suffix : {0, 64}) {
      const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
      const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(1024, suffix));
      const Planned p = plan_hydragen(shape, tree, hydragen(asked), kH100);
      EXPECT_EQ(p.decisions.build.wide_cluster > 1, std::string(asked) != "" || suffix == 0) << asked << " S = " << suffix;
      EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), p.schedule)) << asked << " S = " << suffix;
    }
  }
}

TEST(SegmentSchedule, ClustersTakeTheLeavesOfTheirOwnQueriesWhenTheyFoldThem) {
  struct Case {
    int batch, q_len, q_heads, kv_heads, prefix;
    std::vector<int> suffixes;
  };
  std::vector<int> ragged;
  for (int i = 0; i < 512; ++i) ragged.push_back(3 + (i * 37) % 65);
  for (const Case& c : {Case{1024, 1, 8, 1, 16384, std::vector<int>(1024, 64)}, Case{256, 1, 32, 8, 8192, std::vector<int>(256, 64)},
                        Case{512, 1, 8, 2, 4096, ragged}, Case{1024, 1, 5, 5, 4096, std::vector<int>(1024, 16)}}) {
    const AttentionShape shape = make_shape(c.batch, c.q_len, c.q_heads, c.kv_heads, 128, DType::bf16);
    const SharingTree tree = SharingTree::prefix_suffix(c.prefix, c.suffixes);
    const Planned p = plan_hydragen(shape, tree, hydragen("form=wide:leaves=inside:part_merge=cluster"), kH100);
    const Schedule& s = p.schedule;
    const std::string label = "B " + std::to_string(c.batch) + " Hq/Hkv " + std::to_string(c.q_heads) + "/" + std::to_string(c.kv_heads);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), s)) << label;
    if (p.decisions.build.wide_cluster < 2 || !p.decisions.leaves_inside) continue;  // the plan says why (other tests)
    const int n = p.decisions.build.wide_cluster;
    ASSERT_EQ(s.cluster_leaf_items.size(), s.wide_items.size() / n + 1) << label;
    EXPECT_EQ(s.cluster_leaf_items.back(), static_cast<int>(s.narrow_items.size())) << label;
    for (std::size_t cl = 0; cl + 1 < s.cluster_leaf_items.size(); ++cl) {
      const WorkItem& rows = s.wide_items[cl * n];
      std::set<int> queries;
      for (int r = rows.first_row; r < rows.first_row + rows.num_rows; ++r) queries.insert(s.row_query[r]);
      for (int i = s.cluster_leaf_items[cl]; i < s.cluster_leaf_items[cl + 1]; ++i) {
        const WorkItem& leaf = s.narrow_items[i];
        for (int r = leaf.first_row; r < leaf.first_row + leaf.num_rows; ++r) {
          EXPECT_TRUE(queries.count(s.row_query[r])) << label << ": leaf " << i << " of cluster " << cl;
        }
      }
    }
    EXPECT_EQ(p.decisions.launches.folds(), s.cluster_rows_fold(kFoldRounds)) << label;
  }
}

TEST(SegmentSchedule, StacksRowsSequenceBySequenceQueryByQueryHeadByHeadInABlock) {
  // Rows of a segment's block: sequence-major, then query index, then query head within the KV head.
  const SharingTree tree = SharingTree::prefix_suffix(40, {3, 5});
  const AttentionShape shape = make_shape(2, 2, 4, 2, 64, DType::bf16);
  const Schedule s = make_schedule(Kind::segment, shape, tree, segments_apart(cuts_of(1, kMma64Rows, 1)));
  const std::vector<WorkItem> over_prefix = items_over(s, 0);
  ASSERT_EQ(over_prefix.size(), 2u);  // one per KV head, 8 rows each
  for (const WorkItem& it : over_prefix) {
    std::vector<int> queries(s.row_query.begin() + it.first_row, s.row_query.begin() + it.first_row + it.num_rows);
    const int h0 = it.kv_head * 2;
    // (b * q_len + qi) * Hq + h
    const std::vector<int> want = {h0, h0 + 1, 4 + h0, 4 + h0 + 1, 8 + h0, 8 + h0 + 1, 12 + h0, 12 + h0 + 1};
    EXPECT_EQ(queries, want) << "KV head " << it.kv_head;
  }
}

// cuda-flash on the H100: narrow blocks on 396 resident slots, parts enough for a wave, then more
// only while the last wave would be less than half full (a short wave of streaming blocks cannot
// keep DRAM busy), up to 4 waves (rule narrow_split).
TEST(FlashSchedule, SplitNarrowBlocksIntoAWaveWithNoShortLastWave) {
  // B sequences -> parts per sequence: 64 -> 6 (384 blocks); 256 -> 1 (a wave of 256 blocks);
  // 512 -> 2 (1024 blocks: the last wave holds 232, not 116); 2048 -> 1 (more than four waves).
  for (const auto& [batch, parts] : std::vector<std::pair<int, std::size_t>>{{64, 6}, {256, 1}, {512, 2}, {2048, 1}}) {
    const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(batch, 64));
    const AttentionShape shape = make_shape(batch, 1, 8, 1, 128, DType::bf16);
    const Planned p = plan_flash(shape, tree, flash(), kH100);
    EXPECT_EQ(p.schedule.narrow_items.size(), batch * parts) << "B = " << batch;
    EXPECT_EQ(p.decisions.build.narrow_parts, static_cast<long long>(parts)) << "B = " << batch;
  }
}

// Narrow blocks that alone read their K/V (a flat tree: cuda-flash over redundant storage) stream
// from DRAM and need one block per SM, not a full wave of resident ones; the short-last-wave rule
// still holds beyond one wave. Blocks that share a prefix (the test above) keep the full wave.
TEST(FlashSchedule, SplitStreamingNarrowBlocksToOnePerSm) {
  // B sequences -> parts: 32 -> 4 (128 blocks); 64 -> 2; 128 -> 1; 512 -> 2 (1024 blocks: one part
  // would leave 116 blocks in the second wave of 396).
  for (const auto& [batch, parts] : std::vector<std::pair<int, std::size_t>>{{32, 4}, {64, 2}, {128, 1}, {512, 2}}) {
    const SharingTree tree = SharingTree::flat(std::vector<int>(batch, 4096));
    const AttentionShape shape = make_shape(batch, 1, 8, 1, 128, DType::bf16);
    const Planned p = plan_flash(shape, tree, flash(), kH100);
    EXPECT_EQ(p.schedule.narrow_items.size(), batch * parts) << "B = " << batch;
    EXPECT_NE(decision_of(p, "narrow_split").inputs.find("streaming=yes"), std::string::npos);
    EXPECT_TRUE(check_schedule(Kind::flat, shape, tree, cuts_of(p), p.schedule));
  }
}

// The blocks resident at once share what they read through L2 only if they read the same KV
// head: cuda-flash's items come KV head by KV head, every sequence's items of one KV head side by
// side. In sequence order, 40 KV heads apart, it read a shared prefix from DRAM.
TEST(FlashSchedule, ListsItemsKvHeadByKvHead) {
  const SharingTree tree = SharingTree::prefix_suffix(8192, std::vector<int>(16, 64));
  const AttentionShape shape = make_shape(16, 1, 4, 4, 128, DType::bf16);
  const Schedule s = plan_flash(shape, tree, flash(), kH100).schedule;
  ASSERT_GT(s.narrow_items.size(), 16u * 4) << "the paths are split into parts";
  for (std::size_t i = 1; i < s.narrow_items.size(); ++i) {
    EXPECT_LE(s.narrow_items[i - 1].kv_head, s.narrow_items[i].kv_head) << "item " << i;
  }
}

// ... but a shared segment's parts all start before the leaves of one launch (with q_len * g > 16
// the leaves are wide blocks too): the long items first, or they run past the short ones' end.
TEST(SegmentSchedule, StartsEveryPartOfASharedSegmentBeforeTheLeaves) {
  const SharingTree tree = SharingTree::prefix_suffix(8192, std::vector<int>(256, 64));
  const AttentionShape shape = make_shape(256, 4, 8, 1, 128, DType::bf16);
  const Schedule s = make_schedule(Kind::segment, shape, tree, cuts_of(396, kMma64Rows, 396));
  ASSERT_GT(items_over(s, 0).size(), 256u * 4 * 8 / kMma64Rows) << "the prefix is split into parts";
  bool leaf_seen = false;
  for (const WorkItem& it : s.wide_items) {
    const bool over_prefix = s.item_segments[it.first_segment] == 0;
    EXPECT_FALSE(over_prefix && leaf_seen) << "a part of the prefix after a leaf";
    leaf_seen = leaf_seen || !over_prefix;
  }
  EXPECT_TRUE(leaf_seen) << "the leaves are wide blocks";
}

// cuda-hydragen on an H100 (132 SMs, wgmma blocks), form=auto: one launch of narrow blocks only where
// the wide form would need a second launch for the leaves joined to it (not one whose leaves fold its
// merge, unless they fold more than four rows each and the narrow items fit one wave) and the narrow
// items are short: at most one per SM of at most 512 tokens, or two per SM of at most 256 (rule form).
TEST(HydragenPlan, RunsOneNarrowLaunchWhereItsItemsAreFewAndShort) {
  struct Row {
    int batch, prefix, suffix;
    bool one_launch;
  };
  // (32, 1024, S): 16 prefix blocks of 16 rows x 4 parts of 256 + 32 leaves; at S = 64 and 256 the wide
  // form's leaves fold (two launches, no join), at 512 they do not (128 items of at most 256 tokens).
  // (16, 2048, 64 / 256): 80 items of 256 tokens, one wave, though the wide form's leaves would fold 8
  // prefix parts (token_warps' long fold: 1.02x / 1.05x slower on an H200, perf-notes v49). (32, 2048,
  // 64): 160 items of 256 tokens, a second wave, against that long fold (narrow, 1.11x slower). (32,
  // 4096, 256), (32, 8192, 64): 160 items of 512 and 1024 tokens. (64, 1024, 64): the wide form folds.
  // (32, 1024, 0): no leaves, so the wide form is a single launch already.
  for (const Row& c : {Row{32, 1024, 64, false}, Row{32, 1024, 256, false}, Row{32, 1024, 512, true},
                       Row{16, 2048, 64, true}, Row{16, 2048, 256, true}, Row{32, 2048, 64, false},
                       Row{32, 4096, 256, false}, Row{32, 8192, 64, false}, Row{64, 1024, 64, false},
                       Row{1024, 16384, 64, false}, Row{32, 1024, 0, false}}) {
    const SharingTree tree = SharingTree::prefix_suffix(c.prefix, std::vector<int>(c.batch, c.suffix));
    const AttentionShape shape = make_shape(c.batch, 1, 8, 1, 128, DType::bf16);
    SCOPED_TRACE(shape.describe() + ", prefix " + std::to_string(c.prefix) + ", suffix " + std::to_string(c.suffix));
    const Planned p = plan_hydragen(shape, tree, hydragen(), kH100);
    const Schedule& s = p.schedule;
    EXPECT_EQ(decision_of(p, "form").choice.rfind(c.one_launch ? "narrow" : "wide", 0), 0u) << decision_of(p, "form").choice;
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), s));
    if (c.one_launch) {
      EXPECT_TRUE(s.wide_items.empty());
      EXPECT_LE(s.narrow_items.size(), 2 * 132u);
      EXPECT_EQ(p.decisions.build.max_rows, kNarrowRows);
    } else {
      EXPECT_FALSE(s.wide_items.empty());
      EXPECT_EQ(p.decisions.build.max_rows, kWgmmaRows);
    }
  }
}

// The leaves can do the merge (MergeParams::fold_wide_rows) where each query has its leaf's row and
// a few of the prefix's parts. Not where the prefix is cut into many parts (for a lane's two rows,
// more than two), a leaf is split, a sequence has no leaf, or there are no leaves. (leaves=after:
// the layout whose leaves may fold.)
TEST(HydragenPlan, LetsTheLeavesFoldTheMergeWhereEachQueryHasOneLeafRowAndFewWideRows) {
  struct Row {
    int batch, prefix, suffix, q_len, q_heads, kv_heads;
    bool last_leaf_empty, fold;
    const char* why;
  };
  for (const Row& c : {Row{1024, 16384, 64, 1, 8, 1, false, true, "2 prefix parts and the leaf"},
                       Row{512, 4096, 64, 1, 8, 1, false, true, "4 prefix parts and the leaf"},
                       Row{256, 8192, 64, 1, 32, 8, false, true, "GQA: 2 prefix parts and the leaf"},
                       Row{64, 2048, 64, 1, 32, 8, false, true, "GQA: half a wave, 4 prefix parts and the leaf"},
                       Row{64, 8192, 64, 1, 8, 1, false, false, "16 prefix parts"},
                       Row{256, 16384, 64, 2, 8, 1, false, false, "4 prefix parts for each of a lane's two rows"},
                       Row{528, 16384, 512, 1, 8, 1, false, false, "4 prefix parts, but the leaves split in two"},
                       Row{1024, 16384, 64, 1, 8, 1, true, false, "a sequence without a leaf row"},
                       Row{1024, 16384, 0, 1, 8, 1, false, false, "no leaves"}}) {
    std::vector<int> suffixes(c.batch, c.suffix);
    if (c.last_leaf_empty) suffixes.back() = 0;
    const SharingTree tree = SharingTree::prefix_suffix(c.prefix, suffixes);
    const AttentionShape shape = make_shape(c.batch, c.q_len, c.q_heads, c.kv_heads, 128, DType::bf16);
    SCOPED_TRACE(shape.describe() + ", prefix " + std::to_string(c.prefix) + ", suffix " + std::to_string(c.suffix) + ": " + c.why);
    const Planned p = plan_hydragen(shape, tree, hydragen("leaves=after"), kH100);
    EXPECT_EQ(p.schedule.narrow_rows_fold(kFoldRounds, p.decisions.narrow_kernel), c.fold);
    EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), p.schedule));
  }
}

// Where the prefix is split in 5-8 parts, only token_warps' leaves fold (a row a lane, in the kernel
// compiled for kLongFoldRounds); the other narrow kernels' leaves keep the merge kernel.
TEST(HydragenPlan, FoldsFiveToEightPrefixPartsOnlyInTokenWarpsLongFold) {
  const AttentionShape shape = make_shape(32, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(2048, std::vector<int>(32, 64));
  const Planned p = plan_hydragen(shape, tree, hydragen(), kH100);
  ASSERT_EQ(p.decisions.narrow_kernel, ItemKernel::token_warps);
  EXPECT_GT(p.schedule.max_partials() - 1, kFoldRounds) << "more wide rows a query than the short fold takes";
  EXPECT_LE(p.schedule.max_partials() - 1, kLongFoldRounds);
  EXPECT_TRUE(p.decisions.launches.folds());
  EXPECT_EQ(p.decisions.launches.fold_rounds, kLongFoldRounds);
  EXPECT_EQ(fold_rounds(p.schedule, ItemKernel::token_warps), kLongFoldRounds);
  EXPECT_EQ(fold_rounds(p.schedule, ItemKernel::item_warps), 0);
  EXPECT_EQ(fold_rounds(p.schedule, ItemKernel::sm_item_warps), 0);
}

// A wgmma launch of items of these lengths, then leaves whose rows fold (no query has rows that
// cannot): what rule fold_leaves weighs.
Schedule wgmma_then_leaves(const std::vector<long long>& wide_lengths) {
  Schedule s;
  for (long long tokens : wide_lengths) {
    WorkItem item{};
    item.token_end = static_cast<int>(tokens);
    s.wide_items.push_back(item);
  }
  s.narrow_items.push_back(WorkItem{});
  s.merge_offsets = {0};
  return s;
}

// Rule fold_leaves on the H100 for a wgmma launch of `wide_blocks` equal items (or `wide_lengths`)
// and `narrow_blocks` 16-row leaf blocks, whose rows fold in kFoldRounds: the rule's rounds, or 0.
Ruled<int> fold(const std::vector<long long>& wide_lengths, int narrow_blocks, const DeviceLimits& device = kH100) {
  const Schedule s = wgmma_then_leaves(wide_lengths);
  EXPECT_TRUE(s.narrow_rows_fold(kFoldRounds, ItemKernel::token_warps));
  Ruled<int> r = fold_leaves(s, ItemKernel::wgmma, ItemKernel::token_warps, narrow_blocks, 0, device);
  EXPECT_TRUE(r.choice == 0 || r.choice == kFoldRounds) << r.choice << " rounds";
  return r;
}
bool folds(int wide_blocks, long long tokens, int narrow_blocks) { return fold(leaves(wide_blocks, tokens), narrow_blocks).choice > 0; }

// Folding leaves wait at their end for the wgmma launch: only where they all fit beside it at once,
// or it leaves little SM time idle (the H100's cases of perf-notes v18, v21). Equal items leave the
// SMs without a block idle for the whole launch.
TEST(FoldLeaves, WhereTheyAllFitBesideTheWgmmaLaunchOrItLeavesLittleRoomBesideIt) {
  EXPECT_TRUE(folds(32, 256, 128)) << "(128, 1024, 64): 100 SMs free hold all 128";
  EXPECT_TRUE(folds(128, 4096, 512)) << "GQA (256, 8192, 64): 4 SMs free";
  EXPECT_TRUE(folds(264, 256, 256)) << "two full waves of wgmma blocks";
  EXPECT_TRUE(folds(120, 2731, 640)) << "MHA 40 heads (64, 8192, 64): 12 SMs free, a short launch";
  EXPECT_TRUE(folds(120, 341, 1280)) << "Fig. 3b's shard at P = 1024";
  EXPECT_FALSE(folds(120, 5419, 1280)) << "Fig. 3b's shard at P = 16256: 12 SMs free, a long launch";
  EXPECT_FALSE(folds(80, 8192, 2560)) << "MHA 40 heads (256, 8192, 64): 52 SMs free";
  EXPECT_FALSE(folds(128, 16384, 256)) << "(1024, 16384, 64): 4 SMs free through 16384 tokens";
}

TEST(FoldLeaves, OnlyAfterAWgmmaLaunchWithDependentLaunchAndLeavesAfterIt) {
  const Schedule s = wgmma_then_leaves(leaves(32, 256));  // folds on the H100 (the test above)
  EXPECT_EQ(fold_leaves(s, ItemKernel::mma64, ItemKernel::token_warps, 128, 0, kH100).choice, 0) << "mma.sync wide blocks";
  EXPECT_EQ(fold_leaves(s, ItemKernel::wgmma, ItemKernel::token_warps, 128, 12, kH100).choice, 0) << "leaves beside";
  const DeviceLimits no_pdl{132, true, false, "NVIDIA H100 80GB HBM3"};
  const Ruled<int> without = fold_leaves(s, ItemKernel::wgmma, ItemKernel::token_warps, 128, 0, no_pdl);
  EXPECT_EQ(without.choice, 0);
  EXPECT_NE(without.decision.reason.find("dependent launch"), std::string::npos) << without.decision.reason;
}

TEST(ListSchedule, EndsWithTheLongestItemAndCountsTheRoomTheShortOnesLeave) {
  // Equal items: whole waves, and the SMs without a block idle throughout.
  const ListSchedule one_wave = list_schedule(leaves(128, 4096), 132);
  EXPECT_EQ(one_wave.end_tokens, 4096);
  EXPECT_EQ(one_wave.idle_sm_tokens, 4 * 4096);
  const ListSchedule waves = list_schedule(leaves(200, 1000), 132);
  EXPECT_EQ(waves.end_tokens, 2000);
  EXPECT_EQ(waves.idle_sm_tokens, 64 * 1000) << "the second wave's 68 blocks leave 64 SMs";
  // The two-level tree 16x1024 at B = 1024: 64 prefix row blocks of 4096 tokens, 64 group row blocks
  // of 1024; the groups' SMs idle three quarters of the launch, where folding leaves cannot run
  // (1.04x slower than the merge kernel on the H100, perf-notes v21).
  std::vector<long long> two_level = leaves(64, 4096);
  for (long long l : leaves(64, 1024)) two_level.push_back(l);
  const ListSchedule tree = list_schedule(two_level, 132);
  EXPECT_EQ(tree.end_tokens, 4096);
  EXPECT_EQ(tree.idle_sm_tokens, 64 * 3072 + 4 * 4096);
  const Ruled<int> folding = fold(two_level, 256);
  EXPECT_EQ(folding.choice, 0);
  EXPECT_NE(folding.decision.inputs.find("idle_sm_tokens=" + std::to_string(tree.idle_sm_tokens)), std::string::npos)
      << folding.decision.inputs;
  // Blocks go to the first SM free, in item order: the short items fill in behind the long ones.
  std::vector<long long> filled = leaves(2, 4096);
  for (long long l : leaves(8, 1024)) filled.push_back(l);
  const ListSchedule behind = list_schedule(filled, 4);
  EXPECT_EQ(behind.end_tokens, 4096);
  EXPECT_EQ(behind.idle_sm_tokens, 0);
}

// ---- the device's numbers and cuda-hydragen-cublas's chunks ---------------------------------------

// cuda-hydragen's wgmma launch at a prefix/suffix point with the leaves after it (rule wide_target_blocks):
// its wide items, and how the rule's reason begins.
void expect_wide_target(int batch, int prefix, int suffix, int q_heads, int kv_heads, const DeviceLimits& device,
                        std::size_t wide_items, const std::string& reason, const std::string& why) {
  const SharingTree tree = SharingTree::prefix_suffix(prefix, std::vector<int>(batch, suffix));
  const AttentionShape shape = make_shape(batch, 1, q_heads, kv_heads, 128, DType::bf16);
  SCOPED_TRACE(shape.describe() + ", prefix " + std::to_string(prefix) + ", suffix " + std::to_string(suffix) + " on " + device.name +
               ": " + why);
  const Planned p = plan_hydragen(shape, tree, hydragen("leaves=after"), device);
  EXPECT_EQ(p.schedule.wide_items.size(), wide_items);
  EXPECT_EQ(decision_of(p, "wide_target_blocks").reason.rfind(reason, 0), 0u) << decision_of(p, "wide_target_blocks").reason;
  EXPECT_TRUE(check_schedule(Kind::segment, shape, tree, cuts_of(p), p.schedule));
}

// cuda-hydragen's wgmma launch on an H100 (rule wide_target_blocks): a wave of blocks, one per SM,
// unless a wave would cut short parts: then half a wave, the parts twice as long. Short: at most 512
// tokens where leaves of more than one row and 16 tokens or more follow (they stream on the SMs the
// half wave leaves), the shortest split-KV cuts (256) where none do.
TEST(HydragenPlan, RunsHalfAWaveOfWgmmaBlocksWhereAWaveWouldCutShortParts) {
  struct Row {
    int batch, prefix, suffix, q_heads, kv_heads;
    std::size_t wide_items;
    const char* why;
  };
  for (const Row& c : {Row{256, 2048, 64, 8, 1, 64, "a wave: 16 row blocks x 8 parts of 256 tokens"},
                       Row{512, 1024, 64, 8, 1, 64, "a wave: 32 x 4 parts of 256"},
                       Row{256, 4096, 64, 8, 1, 64, "a wave: 16 x 8 parts of 512"},
                       Row{64, 2048, 64, 32, 8, 64, "GQA, a wave: 16 x 8 parts of 256"},
                       Row{256, 2048, 0, 8, 1, 64, "no leaves, a wave: 16 x 8 parts of 256"},
                       Row{256, 8192, 64, 8, 1, 128, "a wave's parts of 1024 tokens: a wave"},
                       Row{256, 4096, 0, 8, 1, 128, "no leaves, a wave's parts of 512: a wave"},
                       Row{256, 4096, 1, 8, 1, 128, "leaves of a token, as none: a wave's parts of 512, a wave"},
                       Row{32, 4096, 0, 8, 1, 32, "a wave cuts 2 x 16 parts, under half a wave already"}}) {
    expect_wide_target(c.batch, c.prefix, c.suffix, c.q_heads, c.kv_heads, kH100, c.wide_items,
                       c.wide_items == 64 ? "half a wave" : "one wave", c.why);
  }
}

// Leaves of one row each (MHA decoding) stream their K/V while the wgmma launch computes: where a
// wave would hold every SM and the stream at the DRAM rate lasts at least a part's compute, the launch
// takes the fewest parts per row block (1, 2, 4, ...) that do, within half the SMs, and the leaves run
// on the other SMs beside it.
// On the H100's rates (4700 FLOP/ns a wgmma SM, 2600 B/ns of DRAM), a 1024-token part computes 14.3 us.
TEST(HydragenPlan, SplitsTheWgmmaLaunchNoFinerThanOneRowLeavesStreamBesideIt) {
  struct Row {
    int batch, prefix, suffix, heads;
    DeviceLimits device;
    std::size_t wide_items;
    const char* reason;  // how the rule's reason begins
    const char* why;
  };
  const DeviceLimits unrated{132, true, true, "a 132-SM device without rates"};
  for (const Row& c :
       {Row{1024, 1024, 16, 5, kH100, 40, "1 part per row block", "the decoder: 40 row blocks, leaves 16.1 us against 14.3"},
        Row{1024, 4096, 64, 5, kH100, 40, "1 part per row block", "leaves 64.5 us against 57.1"},
        Row{1024, 4096, 16, 5, kH100, 120, "one wave", "16.1 us against 57.1, and 80 blocks are more than half"},
        Row{64, 2048, 64, 32, kH100, 64, "2 parts per row block", "32 row blocks: leaves 25.8 us against 28.6, then 14.3"},
        Row{256, 8192, 64, 32, kH100, 128, "one wave", "64 row blocks: 103 us against 114, and 128 blocks are more than half"},
        Row{64, 1024, 64, 32, kH100, 64, "half a wave", "a wave's parts of 256 tokens: half a wave holds half the SMs already"},
        Row{1024, 1024, 64, 5, unrated, 120, "one wave", "no rates: no stream to weigh"}}) {
    expect_wide_target(c.batch, c.prefix, c.suffix, c.heads, c.heads, c.device, c.wide_items, c.reason, c.why);
  }
}

// Rule chain_leaves: leaves after or beside a wgmma launch, not folding, are its dependent launch where
// the device has dependent launches (leaf_launch=stream keeps the side stream); elsewhere nothing changes.
TEST(HydragenPlan, LeavesAfterOrBesideAWgmmaLaunchAreItsDependentLaunchUnlessTheyFold) {
  const SharingTree decoder = SharingTree::prefix_suffix(1024, std::vector<int>(1024, 64));
  const AttentionShape mha5 = make_shape(1024, 1, 5, 5, 128, DType::bf16);
  EXPECT_EQ(plan_hydragen(mha5, decoder, hydragen(), kH100).decisions.recipe, LaunchRecipe::chained_leaves);
  EXPECT_EQ(plan_hydragen(mha5, decoder, hydragen("leaf_launch=stream"), kH100).decisions.recipe, LaunchRecipe::side_by_side);
  const DeviceLimits no_pdl{132, true, false, "NVIDIA H100 80GB HBM3"};
  EXPECT_EQ(plan_hydragen(mha5, decoder, hydragen("leaf_launch=chained"), no_pdl).decisions.recipe, LaunchRecipe::side_by_side);
  const SharingTree folds = SharingTree::prefix_suffix(2048, std::vector<int>(256, 64));
  EXPECT_EQ(plan_hydragen(make_shape(256, 1, 8, 1, 128, DType::bf16), folds, hydragen(), kH100).decisions.recipe,
            LaunchRecipe::folded_leaves);
  const SharingTree beside = SharingTree::prefix_suffix(4096, std::vector<int>(1024, 32));
  const Planned chained_beside = plan_hydragen(mha5, beside, hydragen(), kH100);
  EXPECT_GT(chained_beside.decisions.leaf_sms, 0);
  EXPECT_EQ(chained_beside.decisions.recipe, LaunchRecipe::chained_leaves);
  EXPECT_EQ(plan_hydragen(mha5, beside, hydragen("leaf_launch=stream"), kH100).decisions.recipe, LaunchRecipe::leaves_beside);
  EXPECT_EQ(plan_hydragen(mha5, beside, hydragen(), no_pdl).decisions.recipe, LaunchRecipe::leaves_beside);
}

TEST(PlanDecisions, BuildChoicesComeFromTheSmCountOfTheDevice) {
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(1024, 64));
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const Planned h100 = plan_hydragen(shape, tree, hydragen(), kH100);
  EXPECT_EQ(h100.decisions.build.max_rows, kWgmmaRows);
  EXPECT_EQ(h100.decisions.build.wide_target_blocks, 132) << "one wave of one wgmma block per SM";
  EXPECT_NE(decision_of(h100, "narrow_split").inputs.find("resident_blocks=396"), std::string::npos) << "3 narrow blocks per SM";
  const Planned a100 = plan_hydragen(shape, tree, hydragen(), DeviceLimits{108, false, false, "NVIDIA A100-SXM4-80GB"});
  EXPECT_EQ(a100.decisions.build.max_rows, kMma64Rows);
  EXPECT_EQ(a100.decisions.build.wide_target_blocks, 972) << "three waves of 3 mma.sync blocks per SM";
  EXPECT_NE(decision_of(a100, "narrow_split").inputs.find("resident_blocks=324"), std::string::npos);
  const AttentionShape fp32 = make_shape(1024, 1, 8, 1, 128, DType::fp32);
  EXPECT_EQ(plan_hydragen(fp32, tree, hydragen(), DeviceLimits{142, true, true, "a 142-SM test device"}).decisions.build.max_rows,
            kNarrowRows)
      << "fp32 has only CUDA-core 16-row blocks";
}

TEST(GemmSchedule, ChunksEachSharedSegmentWithinTheBoundAndLeavesTheOthersToItems) {
  // 8 sequences x q_len 1 x g 4 = 32 stacked rows per KV head, 2 KV heads: 64 scores per token. A
  // bound of 6400 scores fits 100 tokens, 96 as a multiple of 16: ceil(1000 / 96) = 11 chunks.
  const SharingTree tree = SharingTree::prefix_suffix(1000, std::vector<int>(8, 17));
  const AttentionShape shape = make_shape(8, 1, 8, 2, 64, DType::bf16);
  const Schedule s = make_schedule(Kind::gemm, shape, tree, kH100Mma, 6400);
  EXPECT_TRUE(check_schedule(Kind::gemm, shape, tree, kH100Mma, s, 6400));
  ASSERT_EQ(s.gemm_chunks.size(), 11u);
  for (const GemmChunk& c : s.gemm_chunks) {
    EXPECT_EQ(c.segment, 0);
    EXPECT_EQ(c.rows, 32);
    EXPECT_EQ(c.gathered_row, 0) << "one shared segment: its queries are gathered once for all its chunks";
    EXPECT_LE(c.token_end - c.token_begin, 96);
  }
  EXPECT_EQ(s.gather_query.size(), 64u);
  EXPECT_EQ(items_over(s, 0).size(), 0u) << "the prefix is the GEMMs'";
  for (int leaf = 1; leaf <= 8; ++leaf) EXPECT_EQ(items_over(s, leaf).size(), 2u) << "one item per KV head";
  EXPECT_EQ(s.max_partials(), 12) << "11 chunks and the leaf";
}

TEST(GemmSchedule, CutsALongSegmentOfFewRowsIntoChunksOneSoftmaxBlockHolds) {
  // 2 sequences x g 8 = 16 rows: the plan's score bound alone would allow a 100000-token chunk.
  const SharingTree tree = SharingTree::prefix_suffix(100000, {5, 5});
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  const Planned p = plan_hydragen_cublas(shape, tree, kH100);
  ASSERT_EQ(p.decisions.build.max_chunk_scores, kMaxChunkScores);
  EXPECT_TRUE(check_schedule(Kind::gemm, shape, tree, cuts_of(p, "never"), p.schedule, kMaxChunkScores));
  EXPECT_EQ(p.schedule.gemm_chunks.size(), static_cast<std::size_t>((100000 + kMaxChunkTokens - 1) / kMaxChunkTokens));
  EXPECT_EQ(p.decisions.recipe, LaunchRecipe::gemm_side_by_side);
}

TEST(GemmSchedule, TakesAtLeast16TokensAChunkWhateverTheBound) {
  const SharingTree tree = SharingTree::prefix_suffix(100, std::vector<int>(4, 3));
  const AttentionShape shape = make_shape(4, 1, 4, 1, 64, DType::bf16);
  const Schedule s = make_schedule(Kind::gemm, shape, tree, kH100Mma, 1);
  EXPECT_TRUE(check_schedule(Kind::gemm, shape, tree, kH100Mma, s, 1));
  EXPECT_EQ(s.gemm_chunks.size(), 7u) << "ceil(100 / 16)";
}

}  // namespace
}  // namespace hydragen::cuda
