#include "schedule.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

#include "hydragen/attention.hpp"
#include "hydragen/indexing.hpp"

namespace hydragen::cuda {

namespace {

// A run of tokens some sequences attend together: the segments laid end to end, the sequences whose
// queries attend them, and whether the last segment is their leaf (causal rows). A GEMM group
// (gemm_schedule) becomes GEMM chunks instead of items.
struct Group {
  std::vector<int> segments;
  std::vector<int> seqs;
  long long tokens;
  bool ends_in_leaf;
  bool gemm = false;
};

int checked_int(long long value, const char* what) {
  if (value > 2147483647LL) throw std::invalid_argument(std::string(what) + " of " + std::to_string(value) + " exceeds int");
  return static_cast<int>(value);
}

// Parts per narrow block for `count` blocks on `slots` resident at once: enough for `min_blocks`,
// then more while a launch of more than a wave would leave its last wave less than half full, until
// there are four waves. A short last wave of streaming blocks cannot keep DRAM busy; beyond that,
// parts only add partials to merge and pipeline fills (perf-notes v8).
long long narrow_parts(long long count, long long slots, long long min_blocks) {
  if (count == 0) return 1;
  for (long long parts = std::max<long long>(1, min_blocks / count);; ++parts) {
    const long long blocks = count * parts, tail = blocks % slots;
    if (blocks <= slots || tail == 0 || 2 * tail >= slots || blocks >= 4 * slots || parts >= kMaxSplits) return parts;
  }
}

// Whether the narrow blocks stream K/V alone: no wide launch beside them, and no (segment, KV head)
// read by two of them (a flat batch, or cuda-flash over redundant storage, whose tree is flat).
// Such blocks need only one per SM (fewer, longer ones ran faster); blocks that share a segment
// read it from L2 and want the full wave of resident blocks (perf-notes v9).
template <typename Block>
bool narrow_blocks_stream(const std::vector<Block>& blocks, int kv_heads) {
  std::vector<bool> read;
  for (const Block& b : blocks) {
    if (b.count > kNarrowRows) return false;
    for (int segment : b.group->segments) {
      const std::size_t at = static_cast<std::size_t>(segment) * kv_heads + b.kv_head;
      if (at >= read.size()) read.resize(2 * at + 1, false);
      if (read[at]) return false;
      read[at] = true;
    }
  }
  return true;
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

// A GEMM group's chunks: as many tokens per chunk as keep KV heads x rows x tokens within
// max_chunk_scores (a multiple of 16, at least 16) and one softmax block's row (kMaxChunkTokens),
// all stacked rows of every KV head. Rows are numbered chunk by chunk, KV head by KV head within a
// chunk.
void add_gemm_chunks(const AttentionShape& shape, const Group& grp, int rows, long long max_chunk_scores, Schedule& s) {
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
// the shared tokens no longer stayed in L2 beside the leaves (1.01x to 1.8x slower, perf-notes v20).
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

// Shared by the schedules: cut each group into row blocks and token splits (or GEMM chunks); every
// item gets rows of its own (the partial outputs it writes), and each query lists its rows for the
// merge.
Schedule build(const AttentionShape& shape, const std::vector<Group>& groups, const ScheduleOptions& options,
               long long max_chunk_scores = 0) {
  options.validate();
  const int rows_per_seq = query_index(shape).rows_per_seq();
  struct Block {
    const Group* group;
    int kv_head, first, count;  // rows [first, first + count) of the group's stacked queries
  };
  std::vector<Block> blocks;
  Schedule s;
  for (const Group& grp : groups) {
    if (grp.tokens == 0) continue;  // attends nothing: no rows, the merge writes the identity
    const int rows = checked_int(static_cast<long long>(grp.seqs.size()) * rows_per_seq, "query rows of a segment");
    if (grp.gemm) {
      add_gemm_chunks(shape, grp, rows, max_chunk_scores, s);
      continue;
    }
    const int block_rows = rows <= kNarrowRows ? kNarrowRows : options.max_rows;
    for (int kv_head = 0; kv_head < shape.kv_heads; ++kv_head) {
      for (int r0 = 0; r0 < rows; r0 += block_rows) blocks.push_back({&grp, kv_head, r0, std::min(block_rows, rows - r0)});
    }
  }
  // Split-KV: while a launch's blocks alone under-fill the GPU, cut each one's tokens into equal
  // parts. Narrow and wide blocks are separate launches, so each kind must fill the GPU by itself
  // (a thousand one-tile leaf blocks do not keep the SMs busy while 128 prefix blocks run).
  long long narrow_count = 0, wide_tokens = 0;
  for (const Block& b : blocks) {
    if (b.count > kNarrowRows) {
      wide_tokens += b.group->tokens;
    } else {
      ++narrow_count;
    }
  }
  // Narrow: narrow_parts, aiming for one block per SM where they stream their own K/V and for a full
  // wave of resident blocks otherwise. Wide: each block its share of wide_target_blocks by tokens,
  // rounded down, as wide_target_blocks is a whole number of waves and overshooting it by a few
  // blocks would cost a nearly empty extra wave (perf-notes v3). By tokens, not by count: with
  // q_len * g > 16 the leaves' one-tile blocks are wide too, and counting them as a prefix block's
  // equals left the prefix unsplit on a fraction of the SMs (perf-notes v12).
  const long long narrow_min = narrow_blocks_stream(blocks, shape.kv_heads) ? std::min(options.sms, options.narrow_slots)
                                                                            : options.narrow_slots;
  const long long narrow_split = narrow_parts(narrow_count, options.narrow_slots, narrow_min);
  // Items in the order their blocks start: a KV head's blocks (of groups from one first segment)
  // side by side, so that the resident blocks read one or two KV heads' tokens and share them through
  // L2. In group order, with 32 or 40 KV heads, one KV head's blocks started 32 or 40 apart and
  // cuda-flash over shared storage read most of a shared prefix from DRAM. Within a KV head, a
  // block's parts stay together: part by part (every block reading the same tokens at once) ran 4-8%
  // slower, and a shared segment's parts start before the leaves of the same launch (perf-notes v14).
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block& x, const Block& y) {
    return std::pair(x.group->segments.front(), x.kv_head) < std::pair(y.group->segments.front(), y.kv_head);
  });
  auto add_item = [&](const Block& b, long long token_begin, long long token_end) {
    const Group& grp = *b.group;
    WorkItem item;
    item.kv_head = b.kv_head;
    item.first_row = s.num_rows();
    item.num_rows = b.count;
    item.first_segment = static_cast<int>(s.item_segments.size());
    item.num_segments = static_cast<int>(grp.segments.size());
    item.token_begin = checked_int(token_begin, "token");
    item.token_end = checked_int(token_end, "token");
    (b.count <= kNarrowRows ? s.narrow_items : s.wide_items).push_back(item);
    s.item_segments.insert(s.item_segments.end(), grp.segments.begin(), grp.segments.end());
    add_rows(shape, grp, b.kv_head, b.first, b.count, s);
  };
  std::vector<long long> wide_part;  // each wide item's part of its block
  for (const Block& b : blocks) {
    const Group& grp = *b.group;
    const long long splits = b.count > kNarrowRows ? wide_split_count(grp.tokens, options.wide_target_blocks, wide_tokens)
                                                   : split_count(grp.tokens, narrow_split);
    for (long long part = 0; part < splits; ++part) {
      add_item(b, grp.tokens * part / splits, grp.tokens * (part + 1) / splits);
      if (b.count > kNarrowRows) wide_part.push_back(part);
    }
  }
  if (options.wide_workers > 0) deal_wide_items(wide_part, options.wide_workers, s);
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

// A group per segment (its tokens, the sequences below it, whether it is their leaf); with
// `inline_narrow`, below the first segment of a path whose readers' stacked rows fit one narrow block,
// a group per sequence over the rest of its path instead, where such paths, times the KV heads, are
// at least a quarter of the SMs (ScheduleOptions::inline_narrow_segments).
std::vector<Group> segment_groups(const AttentionShape& shape, const SharingTree& tree, bool inline_narrow, int sms) {
  const long long rows_per_seq = query_index(shape).rows_per_seq();
  auto narrow = [&](int segment) { return static_cast<long long>(tree.seqs_below(segment).size()) * rows_per_seq <= kNarrowRows; };
  // A segment's readers include its children's, so below a narrow segment every one is narrow.
  std::vector<std::size_t> first(static_cast<std::size_t>(tree.num_seqs()));  // of each path's narrow segments
  long long paths = 0;
  for (int seq = 0; seq < tree.num_seqs(); ++seq) {
    const std::vector<int>& path = tree.path(seq);
    first[seq] = static_cast<std::size_t>(std::find_if(path.begin(), path.end(), narrow) - path.begin());
    paths += first[seq] < path.size();
  }
  const bool inlined = inline_narrow && 4 * paths * shape.kv_heads >= sms;
  std::vector<Group> groups;
  for (int segment = 0; segment < tree.num_segments(); ++segment) {
    if (!(inlined && narrow(segment))) {
      groups.push_back({{segment}, tree.seqs_below(segment), tree.length(segment), tree.is_leaf(segment), false});
    }
  }
  if (inlined) {
    for (int seq = 0; seq < tree.num_seqs(); ++seq) add_path_groups(tree, seq, first[seq], groups);
  }
  return groups;
}

// Narrow blocks the groups make: a block per 16 rows of each group and KV head, before splits.
long long narrow_block_count(const AttentionShape& shape, const std::vector<Group>& groups) {
  const long long rows_per_seq = query_index(shape).rows_per_seq();
  long long blocks = 0;
  for (const Group& grp : groups) {
    if (grp.tokens == 0) continue;
    blocks += shape.kv_heads * ((static_cast<long long>(grp.seqs.size()) * rows_per_seq + kNarrowRows - 1) / kNarrowRows);
  }
  return blocks;
}

}  // namespace

ScheduleOptions ScheduleOptions::for_device(int sms, ItemKernel wide) {
  ScheduleOptions o;
  o.sms = sms;
  o.narrow_slots = blocks_per_sm(ItemKernel::narrow) * sms;
  o.max_rows = cuda::max_rows(wide);
  o.wide_target_blocks = (wide == ItemKernel::wgmma ? 1 : 3) * blocks_per_sm(wide) * sms;
  return o;
}

void ScheduleOptions::validate() const {
  for (const auto& [name, value] : {std::pair<const char*, int>{"sms", sms}, {"narrow_slots", narrow_slots},
                                    {"max_rows", max_rows}, {"wide_target_blocks", wide_target_blocks}}) {
    if (value < 1) throw std::invalid_argument(std::string("ScheduleOptions.") + name + " must be positive, got " + std::to_string(value));
  }
  if (wide_workers < 0) {
    throw std::invalid_argument("ScheduleOptions.wide_workers must be 0 (a block per item) or positive, got " +
                                std::to_string(wide_workers));
  }
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

bool Schedule::narrow_rows_fold(int most_rounds) const {
  std::vector<int> item_rows(static_cast<std::size_t>(num_rows()), 0);  // of the row's narrow item; 0: a wide row
  for (const WorkItem& item : narrow_items) std::fill_n(item_rows.begin() + item.first_row, item.num_rows, item.num_rows);
  for (std::size_t q = 0; q + 1 < merge_offsets.size(); ++q) {
    const int first = merge_offsets[q], count = merge_offsets[q + 1] - first;
    if (count == 0) return false;  // the merge writes its identity
    if (count == 1) continue;      // written by its block
    int narrow_rows = 0, rows_per_lane = 1;
    for (int i = first; i < first + count; ++i) {
      const int rows = item_rows[merge_rows[i]];
      narrow_rows += rows > 0;
      if (rows > 8) rows_per_lane = 2;
    }
    if (narrow_rows != 1 || (count - 1) * rows_per_lane > most_rounds) return false;
  }
  return !narrow_items.empty() && !wide_items.empty();
}

long long split_count(long long tokens, long long parts) {
  return std::clamp<long long>(std::min({parts, tokens / kMinSplitTokens, static_cast<long long>(kMaxSplits)}), 1, tokens);
}

long long wide_split_count(long long tokens, long long target_blocks, long long wide_tokens) {
  return split_count(tokens, tokens * target_blocks / wide_tokens);
}

long long total_tokens(const std::vector<WorkItem>& items) {
  long long tokens = 0;
  for (const WorkItem& item : items) tokens += item.token_end - item.token_begin;
  return tokens;
}

ListSchedule list_schedule(const std::vector<WorkItem>& items, int sms) {
  std::priority_queue<long long, std::vector<long long>, std::greater<>> free_at;  // each SM's end, earliest first
  for (int i = 0; i < sms; ++i) free_at.push(0);
  ListSchedule launch;
  for (const WorkItem& item : items) {
    const long long end = free_at.top() + (item.token_end - item.token_begin);
    free_at.pop();
    free_at.push(end);
    launch.end_tokens = std::max(launch.end_tokens, end);
  }
  launch.idle_sm_tokens = static_cast<long long>(sms) * launch.end_tokens - total_tokens(items);
  return launch;
}

bool persistent_blocks(const std::vector<WorkItem>& items, int slots) {
  // Many items per slot, two 64-token tiles per item on average.
  if (static_cast<long long>(items.size()) < 8LL * slots) return false;
  return total_tokens(items) <= 2LL * kMmaTokens * static_cast<long long>(items.size());
}

ItemKernel narrow_item_kernel(const std::vector<WorkItem>& items, bool alone, const ScheduleOptions& options) {
  const long long n = static_cast<long long>(items.size()), slots = options.narrow_slots, tokens = total_tokens(items);
  auto tiles_at_most = [&](long long tiles) { return tokens <= tiles * kMmaTokens * n; };
  const bool short_items = tiles_at_most(1) && n >= options.sms;
  const bool queued_items = tiles_at_most(3) && n > slots;
  const bool short_second_wave = tiles_at_most(8) && n > slots && n < 2 * slots;
  const bool one_wave_of_warps = alone && tiles_at_most(18) && n > 2 * slots && n <= kItemWarps * slots;
  return n > 0 && (short_items || queued_items || short_second_wave || one_wave_of_warps) ? ItemKernel::warps : ItemKernel::narrow;
}

bool folding_leaves_pay(long long wide_blocks, long long idle_sm_tokens, long long narrow_blocks, int narrow_blocks_per_sm,
                        int sms) {
  const long long free_sms = wide_blocks >= sms ? 0 : sms - wide_blocks;
  return narrow_blocks <= free_sms * narrow_blocks_per_sm || idle_sm_tokens <= kFoldForgoneSmTokens;
}

Schedule flat_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options) {
  validate_problem(shape, tree);
  std::vector<Group> groups;
  for (int seq = 0; seq < tree.num_seqs(); ++seq) add_path_groups(tree, seq, 0, groups);
  return build(shape, groups, options);
}

Schedule segment_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options) {
  validate_problem(shape, tree);
  return build(shape, segment_groups(shape, tree, options.inline_narrow_segments, options.sms), options);
}

Schedule gemm_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                       long long max_chunk_scores) {
  validate_problem(shape, tree);
  std::vector<Group> groups = segment_groups(shape, tree, false, options.sms);
  for (Group& grp : groups) grp.gemm = grp.seqs.size() > 1;
  return build(shape, groups, options, max_chunk_scores);
}

Schedule hydragen_schedule(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options) {
  validate_problem(shape, tree);
  const std::vector<Group> groups = segment_groups(shape, tree, options.inline_narrow_segments, options.sms);
  Schedule wide = build(shape, groups, options);
  if (wide.wide_items.empty() || wide.narrow_items.empty()) return wide;  // one launch already
  // The narrow form has at least a block per 16 rows of each group and KV head: past the SM count, a
  // large problem need not build it to know.
  if (narrow_block_count(shape, groups) > options.sms) return wide;
  ScheduleOptions narrow_options = options;
  narrow_options.max_rows = kNarrowRows;
  Schedule narrow = build(shape, groups, narrow_options);
  if (static_cast<long long>(narrow.narrow_items.size()) <= options.sms) return narrow;
  return wide;
}

}  // namespace hydragen::cuda
