#pragma once
// One hydragen-decode point, timed as the paper's Appendix D.1 times end-to-end decoding: the shared
// prompt prefilled once through the model (its KV real, not random), every bucket's plan and graph
// made, then warm-up runs and timed runs of the decode alone (each from the state right after the
// prefill: the questions' tokens if any, then gen_tokens greedy steps), median and spread.
#include <cstdint>
#include <string>
#include <vector>

#include "decode/communicator.hpp"
#include "decode/presets.hpp"
#include "decode/runtime.hpp"
#include "decode/weight_cache.hpp"
#include "decode/weights.hpp"
#include "hydragen/cost_model.hpp"
#include "hydragen/tree_spec.hpp"

namespace hydragen::decode {

struct MeasureConfig {
  int warmup = 1, runs = 3;
  int bucket = 16;
  std::uint64_t seed = 1;      // weights (when random) and the prompt's and questions' tokens
  std::string backend;         // empty: attention_backend's default for the mode
  const WeightSource* weights = nullptr;  // null: random_weights(seed)
  Peaks peaks;                 // of the runtime's device; zeros: no attention floor
  double memory_fraction = 0.92;  // of the free memory a point may plan to use
};

struct DecodeRow {
  DecodePoint point;
  std::string backend;           // "none" in mode no-attention
  std::string status = "ok";     // ok | x (does not fit) | error
  std::string note;              // why, for x and error
  double tokens_per_s = 0;       // B * gen_tokens / median decode time
  double step_ms = 0;            // median decode time / gen_tokens
  double spread = 0;             // (max - min) / median of the decode times
  double answer_ms = 0;          // median time of the questions' step and the decode (Fig. 5)
  double groups_prefill_ms = 0;  // the groups' prefill (Fig. 6: the problems' descriptions), once
  double attention_floor_ms = 0; // per step: the layers' attention calls at their roofline floor
  // Per step: the same steps' attention alone (Decoder::attend_alone: the leaf advance and every layer's
  // cache append and attention, no other operation), median of the runs; 0 in mode no-attention.
  // step_ms minus no-attention's step_ms, less this, is what running beside the rest of the model costs.
  double attention_ms = 0;
  double host_ms_per_step = 0;   // host time of generate()'s loop per step, waits for queue space included
  double replan_ms = 0;          // host time making, binding and capturing every bucket's plan, before the runs
  // Making the shard: its weights made or read, converted and uploaded (or, held by the WeightCache
  // from an earlier point, found), and the decoder's KV cache and activations allocated.
  double build_ms = 0;
  bool weights_reused = false;   // the shard's weights were the cache's: build_ms is the decoder's allocations alone
  double prefill_ms = 0;         // the shared prompt through the model once (its plan included)
  double memory_gb = 0;          // the estimate the point was admitted on
  int gpus = 1;                  // GPUs (ranks) that ran the point: 1 for one shard of a TP-N model alone
  // With several ranks (0 for one), per step: the step's collectives replayed alone (collective_timing.hpp:
  // measured, what the interconnect costs), the bus bandwidth they reach in that replay, and step_ms
  // minus the same shard's step alone on rank 0's GPU in the same run (derived: the collectives, the
  // ranks' waits for each other and the overlap lost; rank 0's row only).
  double allreduce_ms = 0;
  double allreduce_busbw_gbps = 0;
  double allreduce_derived_ms = 0;
};

// Never throws for a point that cannot run: status x (the estimate exceeds the free memory, in
// well under a second) or error (with the message). With comm, every rank calls it with its own
// runtime for the same point: the ranks admit the point only if it fits on all of them, build their
// shards, and time the decode with the all-reduces (each rank's row its own timing), then time one
// step's collectives alone (allreduce_ms). With `cache`
// (the runtime's), the shard's weights come from it: consecutive points of one shard upload them
// once; without, the point uploads its own and releases them.
DecodeRow measure_point(Runtime& runtime, const DecodePoint& point, const MeasureConfig& config, Communicator* comm = nullptr,
                        WeightCache* cache = nullptr);

// The point on every rank of comm (each calling it): rank 0 first times its shard alone, the others
// waiting, then all ranks time the decode together (both on the cache's weights, when given). Rank 0's
// row, with gpus, allreduce_derived_ms, and build_ms and weights_reused of its run alone (which made the
// shard); the other ranks' rows say only whether they ran.
DecodeRow measure_point_ranks(Runtime& runtime, const DecodePoint& point, const MeasureConfig& config, Communicator& comm,
                              WeightCache* cache = nullptr);

// The backend column of the point's row: the attention backend its mode runs with config.backend
// (attention_backend's choice), "none" in mode no-attention.
std::string row_backend(const DecodePoint& point, const MeasureConfig& config, const Runtime& runtime);

// hydragen-decode's CSV (DESIGN.md section 7, and what plots/decode_*.py read): the header line, and
// one row (fields with commas or quotes quoted).
std::string decode_csv_header();
std::string decode_csv_row(const std::string& device, const std::string& commit, const DecodeRow& row);

// The point's groups below the prompt: one level of tree_spec.hpp's text, none when empty. Throws
// std::invalid_argument for text that is not one level.
TreeSpec decode_groups(const DecodePoint& point);

// The attention floor of one decode step (all layers), from the cost model and the peaks.
double attention_floor_ms(const ModelShard& shard, const DecodePoint& point, DType dtype, const Peaks& peaks);

}  // namespace hydragen::decode
