#include "hydragen/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "hydragen/attention.hpp"

namespace hydragen {

CostEstimate estimate_cost(const AttentionShape& shape, const SharingTree& tree, const CostOptions& options) {
  validate_problem(shape, tree);
  const double elem = static_cast<double>(dtype_size(shape.dtype));
  const double lse_elem = static_cast<double>(dtype_size(lse_dtype(shape.dtype)));
  const double d = shape.head_dim;
  const double kv_token_bytes = 2.0 * shape.kv_heads * d * elem;  // K and V of one token
  const double rows_per_seq = static_cast<double>(shape.q_len) * shape.q_heads;
  const double q_bytes_per_seq = rows_per_seq * d * elem;
  const double out_bytes_per_seq = rows_per_seq * (d * elem + lse_elem);
  const double partial_bytes_per_seq = rows_per_seq * (d + 1) * 4.0;  // fp32 O and LSE

  CostEstimate c;
  for (int s = 0; s < tree.num_seqs(); ++s) {
    const long long path = tree.path_length(s);
    const long long leaf = tree.length(tree.leaf(s));
    long long attended = 0;  // over the q_len causal queries of one head
    for (int qi = 0; qi < shape.q_len; ++qi) attended += path - leaf + attended_tokens(leaf, true, shape.q_len, qi);
    c.flops += 4.0 * d * shape.q_heads * static_cast<double>(attended);
    c.flat_bytes += static_cast<double>(path) * kv_token_bytes + q_bytes_per_seq + out_bytes_per_seq;
    const auto segments = static_cast<double>(tree.path(s).size());
    c.decomposed_bytes += segments * q_bytes_per_seq + out_bytes_per_seq;
    if (segments > 1) c.decomposed_bytes += 2.0 * segments * partial_bytes_per_seq;  // written, then merged
    c.redundant_kv_bytes += static_cast<double>(path) * kv_token_bytes;
  }
  c.kv_bytes = static_cast<double>(tree.total_tokens()) * kv_token_bytes;
  c.decomposed_bytes += c.kv_bytes;
  c.floor_bytes = c.kv_bytes + shape.num_seqs * (q_bytes_per_seq + out_bytes_per_seq);
  c.flat_memory_bytes = c.flat_bytes;
  for (int seg = 0; seg < tree.num_segments(); ++seg) {
    const double seg_bytes = tree.length(seg) * kv_token_bytes;
    const double readers = static_cast<double>(tree.seqs_below(seg).size());
    if (readers > 1 && seg_bytes <= options.cache_bytes) c.flat_memory_bytes -= (readers - 1) * seg_bytes;
  }
  return c;
}

std::string SharingRates::describe() const {
  std::ostringstream text;
  text << "partials at " << partials_share << " of the K/V DRAM rate (" << source << ")";
  return text.str();
}

long long min_shared_tokens(const AttentionShape& shape, int readers, const SharingRates& rates) {
  shape.validate();
  if (readers < 2) throw std::invalid_argument("min_shared_tokens: readers must be at least 2, got " + std::to_string(readers));
  if (!(rates.partials_share > 0 && rates.partials_share <= 1)) {
    throw std::invalid_argument("min_shared_tokens: partials_share must be in (0, 1], got " + rates.describe());
  }
  const double elem = static_cast<double>(dtype_size(shape.dtype));
  const double d = shape.head_dim, rows = static_cast<double>(shape.q_len) * shape.q_heads;
  const double kv_token_bytes = 2.0 * shape.kv_heads * d * elem;
  // A reader whose path had one piece now has two: Q read again, and both pieces' fp32 partials
  // written and merged, at the partials' share of the rate the K/V it saves would have streamed at.
  const double per_reader = (rows * d * elem + 2.0 * 2.0 * rows * (d + 1) * 4.0) / rates.partials_share;
  const double tokens = readers * per_reader / ((readers - 1) * kv_token_bytes);
  return std::max<long long>(1, static_cast<long long>(std::ceil(tokens)));
}

double roofline_seconds(double flops, double bytes, const Peaks& peaks) {
  if (!(peaks.flops_per_s > 0) || !(peaks.bytes_per_s > 0)) {
    throw std::invalid_argument("roofline_seconds: peaks must be positive (flops_per_s, bytes_per_s)");
  }
  return std::max(flops / peaks.flops_per_s, bytes / peaks.bytes_per_s);
}

}  // namespace hydragen
