#pragma once
// Bytes moved and FLOPs for one problem, flat vs decomposed, and the floor they imply.
//
// FLOPs are the same for every method: 4 * D per (query head, attended token) (QK^T and PV, a
// multiply-add each). Bytes differ: a flat method reads each sequence's whole path (the g query
// heads of one KV head share the read); the decomposed method reads each segment once, the queries
// once per segment on their path, and round-trips fp32 partials through the merge.
#include "hydragen/shape.hpp"
#include "hydragen/sharing_rates.hpp"
#include "hydragen/sharing_tree.hpp"

namespace hydragen {

struct CostOptions {
  // Last-level cache size. A shared segment whose K/V fits is assumed to be read from memory once
  // by a flat method (later sequences hit the cache): the regime where batching gains nothing.
  double cache_bytes = 0;
};

struct CostEstimate {
  double flops = 0;              // 4 * D * sum over (sequence, query, query head) of attended tokens
  double floor_bytes = 0;        // each distinct K/V byte once + Q + O + LSE
  double flat_bytes = 0;         // flat: every sequence reads its whole path
  double flat_memory_bytes = 0;  // flat_bytes less the re-reads the cache absorbs (CostOptions)
  double decomposed_bytes = 0;   // Hydragen: segments once, Q per segment, fp32 partials, merge
  double kv_bytes = 0;           // distinct K/V bytes stored (shared storage footprint)
  double redundant_kv_bytes = 0; // K/V bytes with every path copied per sequence

  double flat_intensity() const { return flops / flat_memory_bytes; }          // FLOP per byte
  double decomposed_intensity() const { return flops / decomposed_bytes; }
};

CostEstimate estimate_cost(const AttentionShape& shape, const SharingTree& tree, const CostOptions& options = {});

// The shortest run of tokens worth a segment of its own for `readers` sequences rather than a copy in
// each of their next segments: sharing saves (readers - 1) reads of its K/V, and costs each reader a
// read of its queries and, where its path had one piece, two partial results written and merged, at
// `rates.partials_share` of the K/V's DRAM rate. For bf16, Hq 8, Hkv 1, D 128 at the H100's 0.5
// (device-rates.csv): 73 tokens among 1024 readers, 145 between two (the H100 measured sharing 1.01x
// slower at 64 among 1024 and 128 between two, 1.05x faster at 128 and 256); rate-free (1), half
// that. At least 1. Throws std::invalid_argument for fewer than 2 readers or a partials_share
// outside (0, 1] (naming its source).
long long min_shared_tokens(const AttentionShape& shape, int readers, const SharingRates& rates);

// A machine's two ceilings, measured (DESIGN.md section 6).
struct Peaks {
  double flops_per_s = 0;
  double bytes_per_s = 0;
};

// max(flops / peak FLOP/s, bytes / peak bytes/s): no implementation runs much faster.
double roofline_seconds(double flops, double bytes, const Peaks& peaks);

}  // namespace hydragen
