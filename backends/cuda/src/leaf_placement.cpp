#include "leaf_placement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>
#include <utility>

#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

namespace {

// A wgmma block's time over `tokens` tokens: S = Q K^T and O += P V over its 128 rows, full or not.
double wgmma_ns(long long tokens, const AttentionShape& shape) {
  return static_cast<double>(tokens) * 4.0 * kWgmmaRows * shape.head_dim / kWgmmaSmFlopsPerNs;
}

}  // namespace

LeafPlacement place_leaves(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                           const Schedule& after, bool force) {
  LeafPlacement best;
  if (after.wide_items.empty() || after.narrow_items.empty() || options.sms < 2) return best;
  const double token_bytes = 2.0 * shape.head_dim * static_cast<double>(dtype_size(shape.dtype));  // K and V
  const double leaf_tokens = static_cast<double>(total_tokens(after.narrow_items));  // each read once, its KV head's
  const double leaf_bytes = leaf_tokens * token_bytes;
  const bool measured_leaves = leaf_tokens <= kBesideMaxLeafTokens * static_cast<double>(after.narrow_items.size());
  double shared_bytes = 0;  // the wgmma items' row blocks share a (segment, KV head) through L2: once from DRAM
  std::set<std::pair<int, int>> read;
  std::vector<long long> row_block_tokens;  // of each wide row block (its first part's segment)
  for (const WorkItem& item : after.wide_items) {
    const int segment = after.item_segments[item.first_segment];
    if (read.insert({segment, item.kv_head}).second) shared_bytes += tree.length(segment) * token_bytes;
    if (item.token_begin == 0) row_block_tokens.push_back(tree.length(segment));
  }
  const long long row_blocks = static_cast<long long>(row_block_tokens.size());
  const long long wide_tokens = std::accumulate(row_block_tokens.begin(), row_block_tokens.end(), 0LL);
  // After: the wgmma launch (bound by its compute or its DRAM reads), the leaves streaming on the
  // SMs it leaves meanwhile, then the rest of them on every SM; the whole bounded by both launches'
  // DRAM reads.
  const double dram_bytes_per_ns = kLeafDramBytesPerNs;
  const ListSchedule launch = list_schedule(after.wide_items, options.sms);  // in tokens of one block
  const double wide = std::max(wgmma_ns(launch.end_tokens, shape), shared_bytes / dram_bytes_per_ns);
  const double rest = std::max(0.0, leaf_bytes - wgmma_ns(launch.idle_sm_tokens, shape) * kLeafSmBytesPerNs);
  best.after_ns = std::max(wide + rest / std::min(options.sms * kLeafSmBytesPerNs, dram_bytes_per_ns),
                           (shared_bytes + leaf_bytes) / dram_bytes_per_ns) + kFixedNs;
  // Beside: p parts per row block, dealt m to each of W persistent wgmma blocks; the leaves on as
  // many of the other SMs as stream them within the wgmma launch's time (more slowed the wgmma
  // blocks' L2 reads on the H100: perf-notes v19); the whole bounded by both launches' DRAM reads.
  int best_parts = 0, best_workers = 0;
  for (int parts = 1; parts <= kMaxSplits && row_blocks * parts <= kMaxPartsPerWorker * options.sms;
       ++parts) {
    // The parts segment_schedule cuts for a target of row_blocks x parts: their count and longest.
    long long n = 0, longest = 0;
    for (long long tokens : row_block_tokens) {
      const long long splits = wide_split_count(tokens, row_blocks * parts, wide_tokens);
      n += splits;
      longest = std::max(longest, (tokens + splits - 1) / splits);
    }
    const double part_ns = wgmma_ns(longest, shape);
    for (long long m = std::max<long long>(1, (n + options.sms - 2) / (options.sms - 1)); m <= kMaxPartsPerWorker; ++m) {
      const long long workers = (n + m - 1) / m;
      const double prefix_ns = static_cast<double>(m) * part_ns + static_cast<double>(m - 1) * kPartSwitchNs;
      const double needed = std::ceil(leaf_bytes / (prefix_ns * kLeafSmBytesPerNs));
      const int leaf_sms = std::max(1, static_cast<int>(std::min(needed, static_cast<double>(options.sms - workers))));
      const double leaves_ns = leaf_bytes / std::min(leaf_sms * kLeafSmBytesPerNs, kBesideLeafDramShare * dram_bytes_per_ns);
      const double ns = std::max({prefix_ns, leaves_ns, (shared_bytes + leaf_bytes) / dram_bytes_per_ns}) + kMergeNs + kFixedNs;
      if (best.beside_ns == 0 || ns < best.beside_ns) {
        best.beside_ns = ns;
        best.leaf_sms = leaf_sms;
        best_parts = parts;
        best_workers = static_cast<int>(workers);
      }
    }
  }
  best.beside = best.beside_ns > 0 && (force || (measured_leaves && best.beside_ns < kBesideMargin * best.after_ns));
  if (!best.beside) return best;
  ScheduleOptions o = options;
  o.wide_target_blocks = static_cast<int>(row_blocks * best_parts);
  o.wide_workers = best_workers;
  o.narrow_slots = (options.sms - best_workers) * kMmaBlocksPerSm;  // the leaves' SMs' resident blocks
  best.schedule = segment_schedule(shape, tree, o);
  return best;
}

}  // namespace hydragen::cuda
