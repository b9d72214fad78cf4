#include "schedule.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "hydragen/attention.hpp"
#include "hydragen/indexing.hpp"

namespace hydragen::cuda {

namespace {

int checked_int(long long value, const char* what) {
  if (value > 2147483647LL) throw std::invalid_argument(std::string(what) + " of " + std::to_string(value) + " exceeds int");
  return static_cast<int>(value);
}

// Partial rows of one group's stacked rows [first, first + count) over KV head kv_head: each row's
// query, the positions of the group's tokens it may see, and whose leaf (if any) ends them.
void add_rows(const AttentionShape& shape, const Group& grp, int kv_head, int first, int count, Schedule& s) {
  const QueryIndex index = query_index(shape);
  const int per_seq = index.rows_per_seq();
  for (int r = first; r < first + count; ++r) {
    const int stacked = r % per_seq;
    const int seq = grp.seqs[r / per_seq];
    s.row_query.push_back(static_cast<int>(index.stacked_row(seq, kv_head, stacked)));
    s.row_limit.push_back(checked_int(attended_tokens(grp.tokens, grp.ends_in_leaf, shape.q_len, stacked / index.group_size),
                                      "tokens of a path"));
    s.row_leaf.push_back(grp.ends_in_leaf ? seq : -1);
  }
}

int group_rows(const AttentionShape& shape, const Group& grp) {
  return checked_int(static_cast<long long>(grp.seqs.size()) * query_index(shape).rows_per_seq(), "query rows of a segment");
}

// A GEMM group's chunks: as many tokens per chunk as keep KV heads x rows x tokens within
// max_chunk_scores (a multiple of 16, at least 16) and one softmax block's row (kMaxChunkTokens),
// all stacked rows of every KV head. Rows are numbered chunk by chunk, KV head by KV head within a
// chunk.
void add_gemm_chunks(const AttentionShape& shape, const Group& grp, long long max_chunk_scores, Schedule& s) {
  const int rows = group_rows(shape, grp);
  const long long per_token = static_cast<long long>(shape.kv_heads) * rows;
  const long long fit = std::clamp<long long>(max_chunk_scores / per_token / 16 * 16, 16, kMaxChunkTokens);
  const long long chunks = (grp.tokens + fit - 1) / fit;
  const int gathered = static_cast<int>(s.gather_query.size());
  for (long long c = 0; c < chunks; ++c) {
    GemmChunk chunk;
    chunk.segment = grp.segments.front();
    chunk.token_begin = checked_int(grp.tokens * c / chunks, "token");
    chunk.token_end = checked_int(grp.tokens * (c + 1) / chunks, "token");
    chunk.rows = rows;
    chunk.first_row = s.num_rows();
    chunk.gathered_row = gathered;
    s.gemm_chunks.push_back(chunk);
    for (int kv_head = 0; kv_head < shape.kv_heads; ++kv_head) add_rows(shape, grp, kv_head, 0, rows, s);
  }
  // Every chunk has the same rows: the gathered queries are the first chunk's.
  const auto first = s.row_query.begin() + s.gemm_chunks[s.gemm_chunks.size() - chunks].first_row;
  s.gather_query.insert(s.gather_query.end(), first, first + per_token);
}

// Persistent wide workers: the wide items, in the order of their parts (every block's first part,
// then every second part, ...), dealt round-robin to `workers` workers, each worker's items then
// laid together. The workers' k-th items are then parts of about the same index, so the blocks
// reading one segment at once read about the same tokens, as a launch of a block per part does; cut
// into equal runs of the items in block order (stream-K), they read the whole segment at once and
// the shared tokens no longer stayed in L2 beside the leaves (docs/planner-rules.md: wide_dealing).
void deal_wide_items(const std::vector<long long>& part, int workers, Schedule& s) {
  const std::size_t n = s.wide_items.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return part[x] < part[y]; });
  const std::size_t w_count = std::min<std::size_t>(static_cast<std::size_t>(workers), n);
  std::vector<WorkItem> dealt;
  dealt.reserve(n);
  for (std::size_t w = 0; w < w_count; ++w) {
    s.wide_worker_items.push_back(static_cast<int>(dealt.size()));
    for (std::size_t k = w; k < n; k += w_count) dealt.push_back(s.wide_items[order[k]]);
  }
  s.wide_worker_items.push_back(static_cast<int>(dealt.size()));
  s.wide_items = std::move(dealt);
}

// Sequence seq's path from position `first` to its leaf, laid end to end: one group, or several
// where it is deeper than kMaxItemSegments (only the last holds the leaf).
void add_path_groups(const SharingTree& tree, int seq, std::size_t first, std::vector<Group>& groups) {
  const std::vector<int>& path = tree.path(seq);
  for (; first < path.size(); first += kMaxItemSegments) {
    const std::size_t last = std::min(path.size(), first + kMaxItemSegments);
    Group grp{{path.begin() + static_cast<long>(first), path.begin() + static_cast<long>(last)}, {seq}, 0, last == path.size(), false};
    for (int segment : grp.segments) grp.tokens += tree.length(segment);
    groups.push_back(std::move(grp));
  }
}

// Whether a segment's readers' stacked rows fit one narrow block.
bool few_readers(const AttentionShape& shape, const SharingTree& tree, int segment) {
  return static_cast<long long>(tree.seqs_below(segment).size()) * query_index(shape).rows_per_seq() <= kNarrowRows;
}

// Position of each path's first segment of few readers (its path's size where there is none). A
// segment's readers include its children's, so below such a segment every one has few readers.
std::vector<std::size_t> first_few_readers(const AttentionShape& shape, const SharingTree& tree) {
  std::vector<std::size_t> first(static_cast<std::size_t>(tree.num_seqs()));
  for (int seq = 0; seq < tree.num_seqs(); ++seq) {
    const std::vector<int>& path = tree.path(seq);
    first[seq] = static_cast<std::size_t>(
        std::find_if(path.begin(), path.end(), [&](int segment) { return few_readers(shape, tree, segment); }) - path.begin());
  }
  return first;
}

}  // namespace

std::vector<Group> path_groups(const SharingTree& tree) {
  std::vector<Group> groups;
  for (int seq = 0; seq < tree.num_seqs(); ++seq) add_path_groups(tree, seq, 0, groups);
  return groups;
}

long long narrow_paths(const AttentionShape& shape, const SharingTree& tree) {
  long long paths = 0;
  const std::vector<std::size_t> first = first_few_readers(shape, tree);
  for (int seq = 0; seq < tree.num_seqs(); ++seq) paths += first[seq] < tree.path(seq).size();
  return paths;
}

std::vector<Group> segment_groups(const AttentionShape& shape, const SharingTree& tree, bool inline_paths) {
  std::vector<Group> groups;
  for (int segment = 0; segment < tree.num_segments(); ++segment) {
    if (!(inline_paths && few_readers(shape, tree, segment))) {
      groups.push_back({{segment}, tree.seqs_below(segment), tree.length(segment), tree.is_leaf(segment), false});
    }
  }
  if (inline_paths) {
    const std::vector<std::size_t> first = first_few_readers(shape, tree);
    for (int seq = 0; seq < tree.num_seqs(); ++seq) add_path_groups(tree, seq, first[seq], groups);
  }
  return groups;
}

namespace {

// The groups' row blocks of at most `max_rows` rows, in the order their items start.
std::vector<RowBlock> row_blocks(const AttentionShape& shape, const std::vector<Group>& groups, int max_rows) {
  std::vector<RowBlock> blocks;
  for (const Group& grp : groups) {
    if (grp.tokens == 0 || grp.gemm) continue;  // attends nothing (the merge writes the identity), or GEMM chunks
    const int rows = group_rows(shape, grp);
    const int block_rows = rows <= kNarrowRows ? kNarrowRows : max_rows;
    for (int kv_head = 0; kv_head < shape.kv_heads; ++kv_head) {
      for (int r0 = 0; r0 < rows; r0 += block_rows) blocks.push_back({&grp, kv_head, r0, std::min(block_rows, rows - r0)});
    }
  }
  // Items in the order their blocks start, a KV head's blocks side by side and a block's parts
  // together (docs/planner-rules.md: item_order).
  std::stable_sort(blocks.begin(), blocks.end(), [](const RowBlock& x, const RowBlock& y) {
    return std::pair(x.group->segments.front(), x.kv_head) < std::pair(y.group->segments.front(), y.kv_head);
  });
  return blocks;
}

}  // namespace

BlockCensus census(const AttentionShape& shape, const std::vector<Group>& groups, int max_rows) {
  BlockCensus c;
  c.max_rows = max_rows;
  c.blocks = row_blocks(shape, groups, max_rows);
  std::vector<int> readers;  // (segment, KV head): the blocks reading it, of either kind
  auto reader = [&](int segment, int kv_head) -> int& {
    const std::size_t at = static_cast<std::size_t>(segment) * shape.kv_heads + kv_head;
    if (at >= readers.size()) readers.resize(2 * at + 1, 0);
    return readers[at];
  };
  std::set<std::pair<const Group*, int>> wide_read;  // (group, KV head) read by a wide block
  for (const RowBlock& b : c.blocks) {
    for (int segment : b.group->segments) ++reader(segment, b.kv_head);
    if (!b.narrow()) {
      c.wide_tokens += b.group->tokens;
      if (wide_read.insert({b.group, b.kv_head}).second) c.wide_distinct_tokens += b.group->tokens;
      c.wide_block_tokens.push_back(b.group->tokens);
      continue;
    }
    ++c.narrow_blocks;
    c.narrow_tokens.push_back(b.group->tokens);
  }
  c.narrow_read_once = std::all_of(c.blocks.begin(), c.blocks.end(), [&](const RowBlock& b) {
    return !b.narrow() || std::all_of(b.group->segments.begin(), b.group->segments.end(),
                                      [&](int segment) { return reader(segment, b.kv_head) == 1; });
  });
  c.narrow_stream = c.wide_block_tokens.empty() && c.narrow_read_once;
  return c;
}

long long split_count(long long tokens, long long parts) {
  return std::clamp<long long>(std::min({parts, tokens / kMinSplitTokens, static_cast<long long>(kMaxSplits)}), 1, tokens);
}

long long wide_split_count(long long tokens, long long target_blocks, long long wide_tokens) {
  return split_count(tokens, tokens * target_blocks / wide_tokens);
}

ItemLengths item_lengths(const BlockCensus& c, const BuildChoices& choices) {
  ItemLengths out;
  auto add = [](long long tokens, long long splits, std::vector<long long>& to) {
    for (long long part = 0; part < splits; ++part) to.push_back(tokens * (part + 1) / splits - tokens * part / splits);
  };
  for (long long tokens : c.narrow_tokens) add(tokens, split_count(tokens, choices.narrow_parts), out.narrow);
  for (long long tokens : c.wide_block_tokens) {
    add(tokens, wide_split_count(tokens, choices.wide_target_blocks, c.wide_tokens), out.wide);
  }
  return out;
}

namespace {

// Schedule::cluster_leaf_items: the narrow items in the order of the clusters whose rows their queries'
// are (stable within one), or none where an item's queries are in no cluster's rows or in two.
void group_leaves_by_cluster(const AttentionShape& shape, int cluster, Schedule& s) {
  std::vector<int> query_cluster(static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads, -1);
  for (std::size_t i = 0; i < s.wide_items.size(); i += static_cast<std::size_t>(cluster)) {
    const WorkItem& item = s.wide_items[i];
    for (int r = item.first_row; r < item.first_row + item.num_rows; ++r) {
      query_cluster[s.row_query[r]] = static_cast<int>(i) / cluster;
    }
  }
  std::vector<std::pair<int, WorkItem>> keyed;
  for (const WorkItem& item : s.narrow_items) {
    const int c = query_cluster[s.row_query[item.first_row]];
    for (int r = item.first_row; r < item.first_row + item.num_rows; ++r) {
      if (c < 0 || query_cluster[s.row_query[r]] != c) return;
    }
    keyed.push_back({c, item});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const int clusters = static_cast<int>(s.wide_items.size()) / cluster;
  s.cluster_leaf_items.assign(static_cast<std::size_t>(clusters) + 1, 0);
  for (std::size_t i = 0; i < keyed.size(); ++i) {
    s.narrow_items[i] = keyed[i].second;
    ++s.cluster_leaf_items[static_cast<std::size_t>(keyed[i].first) + 1];
  }
  for (int c = 0; c < clusters; ++c) s.cluster_leaf_items[c + 1] += s.cluster_leaf_items[c];
}

}  // namespace

Schedule build(const AttentionShape& shape, const std::vector<Group>& groups, const BlockCensus& census,
               const BuildChoices& choices) {
  if (census.max_rows != choices.max_rows) {
    throw std::logic_error("build: the census cut row blocks of " + std::to_string(census.max_rows) + " rows, the choices " +
                           std::to_string(choices.max_rows));
  }
  Schedule s;
  for (const Group& grp : groups) {
    if (grp.gemm && grp.tokens > 0) add_gemm_chunks(shape, grp, choices.max_chunk_scores, s);
  }
  auto add_item = [&](const RowBlock& b, long long token_begin, long long token_end, bool new_rows) {
    const Group& grp = *b.group;
    WorkItem item;
    item.kv_head = b.kv_head;
    item.first_row = new_rows ? s.num_rows() : s.wide_items.back().first_row;
    item.num_rows = b.count;
    item.first_segment = static_cast<int>(s.item_segments.size());
    item.num_segments = static_cast<int>(grp.segments.size());
    item.token_begin = checked_int(token_begin, "token");
    item.token_end = checked_int(token_end, "token");
    (b.narrow() ? s.narrow_items : s.wide_items).push_back(item);
    s.item_segments.insert(s.item_segments.end(), grp.segments.begin(), grp.segments.end());
    if (new_rows) add_rows(shape, grp, b.kv_head, b.first, b.count, s);
  };
  std::vector<long long> wide_part;  // each wide item's part of its block
  for (const RowBlock& b : census.blocks) {
    const long long tokens = b.group->tokens;
    const long long splits = b.narrow() ? split_count(tokens, choices.narrow_parts)
                                        : wide_split_count(tokens, choices.wide_target_blocks, census.wide_tokens);
    const bool clustered = !b.narrow() && choices.wide_cluster > 1;
    if (clustered && (splits != choices.wide_cluster || choices.wide_workers > 0)) {
      throw std::logic_error("build: clusters of " + std::to_string(choices.wide_cluster) + " parts, a wide block of " +
                             std::to_string(splits) + (choices.wide_workers > 0 ? " on persistent workers" : ""));
    }
    for (long long part = 0; part < splits; ++part) {
      add_item(b, tokens * part / splits, tokens * (part + 1) / splits, !clustered || part == 0);  // a cluster's parts share rows
      if (!b.narrow()) wide_part.push_back(part);
    }
  }
  if (choices.wide_workers > 0) deal_wide_items(wide_part, choices.wide_workers, s);
  if (choices.cluster_leaves && choices.wide_cluster > 1) group_leaves_by_cluster(shape, choices.wide_cluster, s);
  const int queries = shape.num_seqs * shape.q_len * shape.q_heads;
  std::vector<std::vector<int>> lists(queries);
  for (int r = 0; r < s.num_rows(); ++r) lists[s.row_query[r]].push_back(r);
  s.merge_offsets.push_back(0);
  for (const auto& l : lists) {
    s.merge_rows.insert(s.merge_rows.end(), l.begin(), l.end());
    s.merge_offsets.push_back(static_cast<int>(s.merge_rows.size()));
  }
  return s;
}

int Schedule::max_partials() const {
  int most = 0;
  for (std::size_t q = 0; q + 1 < merge_offsets.size(); ++q) most = std::max(most, merge_offsets[q + 1] - merge_offsets[q]);
  return most;
}

bool Schedule::needs_merge() const {
  for (std::size_t q = 0; q + 1 < merge_offsets.size(); ++q) {
    if (merge_offsets[q + 1] - merge_offsets[q] != 1) return true;
  }
  return false;
}

namespace {

// Whether every query has rows and each of several has exactly one folding row (weight > 0), whose fold
// of the query's other rows takes their number times its weight in rounds, at most `most_rounds`.
bool rows_fold(const Schedule& s, const std::vector<int>& weight, int most_rounds) {
  for (std::size_t q = 0; q + 1 < s.merge_offsets.size(); ++q) {
    const int first = s.merge_offsets[q], count = s.merge_offsets[q + 1] - first;
    if (count == 0) return false;  // the merge writes its identity
    if (count == 1) continue;      // written by its block
    int folders = 0, rounds_per_row = 0;
    for (int i = first; i < first + count; ++i) {
      const int w = weight[static_cast<std::size_t>(s.merge_rows[i])];
      if (w > 0) ++folders, rounds_per_row = w;
    }
    if (folders != 1 || (count - 1) * rounds_per_row > most_rounds) return false;
  }
  return true;
}

}  // namespace

bool Schedule::cluster_rows_fold(int most_rounds) const {
  if (cluster_leaf_items.empty()) return false;
  std::vector<int> weight(static_cast<std::size_t>(num_rows()), 0);  // the cluster's rows fold, a row a round
  for (const WorkItem& item : wide_items) std::fill_n(weight.begin() + item.first_row, item.num_rows, 1);
  return rows_fold(*this, weight, most_rounds);
}

bool Schedule::narrow_rows_fold(int most_rounds, ItemKernel narrow) const {
  if (narrow_items.empty() || wide_items.empty()) return false;
  // The narrow rows fold; a lane of the rows product in an item of more than 8 rows holds rows g and
  // g + 8, so twice the rounds.
  std::vector<int> weight(static_cast<std::size_t>(num_rows()), 0);
  for (const WorkItem& item : narrow_items) {
    const bool two_a_lane = narrow != ItemKernel::token_warps && item.num_rows > 8;
    std::fill_n(weight.begin() + item.first_row, item.num_rows, two_a_lane ? 2 : 1);
  }
  return rows_fold(*this, weight, most_rounds);
}

long long total_tokens(const std::vector<WorkItem>& items) {
  long long tokens = 0;
  for (const WorkItem& item : items) tokens += item.token_end - item.token_begin;
  return tokens;
}

long long total_tokens(const std::vector<long long>& lengths) {
  long long tokens = 0;
  for (long long l : lengths) tokens += l;
  return tokens;
}

std::vector<long long> item_lengths(const std::vector<WorkItem>& items) {
  std::vector<long long> out;
  out.reserve(items.size());
  for (const WorkItem& item : items) out.push_back(item.token_end - item.token_begin);
  return out;
}

ListSchedule list_schedule(const std::vector<long long>& lengths, int sms) {
  std::priority_queue<long long, std::vector<long long>, std::greater<>> free_at;  // each SM's end, earliest first
  for (int i = 0; i < sms; ++i) free_at.push(0);
  ListSchedule launch;
  for (long long length : lengths) {
    const long long end = free_at.top() + length;
    free_at.pop();
    free_at.push(end);
    launch.end_tokens = std::max(launch.end_tokens, end);
  }
  launch.idle_sm_tokens = static_cast<long long>(sms) * launch.end_tokens - total_tokens(lengths);
  return launch;
}

}  // namespace hydragen::cuda
