#include "leaf_placement.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

namespace {

// The wgmma launch's compute time: its longest item, once per wave of one block per SM.
double wide_ns(const Schedule& s, const AttentionShape& shape, int sms) {
  const long long waves = (static_cast<long long>(s.wide_items.size()) + sms - 1) / sms;
  const double flops_per_token = 4.0 * kWgmmaRows * shape.head_dim;  // S = Q K^T and O += P V
  return static_cast<double>(waves * longest_tokens(s.wide_items)) * flops_per_token / kWgmmaSmFlopsPerNs;
}

}  // namespace

LeafPlacement place_leaves(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                           const Schedule& after, bool force) {
  LeafPlacement best;
  if (after.wide_items.empty() || after.narrow_items.empty()) return best;
  const double token_bytes = 2.0 * shape.head_dim * static_cast<double>(dtype_size(shape.dtype));  // K and V
  const double leaf_tokens = static_cast<double>(total_tokens(after.narrow_items));  // each read once, its KV head's
  const double leaf_bytes = leaf_tokens * token_bytes;
  const bool measured_leaves = leaf_tokens <= kBesideMaxLeafTokens * static_cast<double>(after.narrow_items.size());
  double shared_bytes = 0;  // the wgmma items' row blocks share a (segment, KV head) through L2: once from DRAM
  std::set<std::pair<int, int>> read;
  for (const WorkItem& item : after.wide_items) {
    const int segment = after.item_segments[item.first_segment];
    if (read.insert({segment, item.kv_head}).second) shared_bytes += tree.length(segment) * token_bytes;
  }
  // After: the wgmma launch (bound by its compute or its DRAM reads), then the leaves on every SM.
  const double dram_bytes_per_ns = kLeafDramBytesPerNs;
  best.after_ns = std::max(wide_ns(after, shape, options.sms), shared_bytes / dram_bytes_per_ns) +
                  leaf_bytes / std::min(options.sms * kLeafSmBytesPerNs, dram_bytes_per_ns);
  // Beside: for each number of parts per row block whose wgmma blocks leave SMs, the leaves on as
  // many of those as stream them within the wgmma launch's time (more slowed the wgmma blocks'
  // L2 reads on the H100: perf-notes v19), and the whole bounded by both launches' DRAM reads.
  const int row_blocks = static_cast<int>(
      std::count_if(after.wide_items.begin(), after.wide_items.end(), [](const WorkItem& item) { return item.token_begin == 0; }));
  for (int parts = 1; static_cast<long long>(row_blocks) * parts < options.sms && parts <= kMaxSplits; ++parts) {
    ScheduleOptions o = options;
    o.wide_target_blocks = row_blocks * parts;
    o.narrow_slots = (options.sms - o.wide_target_blocks) * kMmaBlocksPerSm;  // the leaves' SMs' resident blocks
    Schedule s = segment_schedule(shape, tree, o);
    const int free_sms = options.sms - static_cast<int>(s.wide_items.size());
    if (free_sms < 1) continue;
    const double prefix_ns = wide_ns(s, shape, options.sms);
    const double needed = std::ceil(leaf_bytes / (prefix_ns * kLeafSmBytesPerNs));
    const int leaf_sms = std::max(1, static_cast<int>(std::min(needed, static_cast<double>(free_sms))));
    const double leaves_ns = leaf_bytes / std::min(leaf_sms * kLeafSmBytesPerNs, dram_bytes_per_ns);
    const double ns = std::max({prefix_ns, leaves_ns, (shared_bytes + leaf_bytes) / dram_bytes_per_ns}) + kMergeNs;
    if (best.beside_ns == 0 || ns < best.beside_ns) {
      best.beside_ns = ns;
      if (force || (measured_leaves && ns < kBesideMargin * best.after_ns)) {
        best.beside = true;
        best.leaf_sms = leaf_sms;
        best.schedule = std::move(s);
      }
    }
  }
  return best;
}

}  // namespace hydragen::cuda
