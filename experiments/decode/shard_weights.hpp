#pragma once
// One tensor-parallel shard's weights, uploaded into a runtime's memory once. A Decoder reads them
// and owns none; hydragen-decode's points of the same shard share one upload (weight_cache.hpp), which
// for a large model takes far longer than a point's decode.
#include <cstddef>
#include <string>
#include <vector>

#include "decode/model_config.hpp"
#include "decode/runtime.hpp"
#include "decode/weights.hpp"

namespace hydragen::decode {

class ShardWeights {
 public:
  struct Layer {
    Buffer attn_norm, wqkv, wo, mlp_norm, gate_up, down;  // [H], [(Hq + 2 Hkv) D, H], [H, Hq D], [H], [2F, H], [H, F]
  };

  // Loads rank `rank`'s part of every tensor from `source` and uploads it (Q, K, V and gate, up each
  // stacked into one matrix). Throws std::invalid_argument for a rank outside [0, tp).
  ShardWeights(const Runtime& runtime, const ModelShard& shard, const WeightSource& source, int rank);
  ShardWeights(const ShardWeights&) = delete;
  ShardWeights& operator=(const ShardWeights&) = delete;

  // Empty when these are rank `rank` of `shard` (model name, layers, tp) in `runtime`; otherwise
  // the mismatch, naming both.
  std::string mismatch(const Runtime& runtime, const ModelShard& shard, int rank) const;
  const std::string& source() const { return source_; }  // the WeightSource's describe()
  std::size_t bytes() const;                               // of every buffer, in the runtime's memory

  Buffer embed;       // [V, H]: every rank's whole table
  Buffer final_norm;  // [H]
  Buffer lm_head;     // [vocab_rows, H]: this rank's rows of the vocabulary (padding rows zero)
  std::vector<Layer> layers;

 private:
  const Runtime* runtime_;    // identity only, never dereferenced
  std::string runtime_name_;  // for the mismatch's message
  ModelShard shard_;
  int rank_;
  std::string source_;
};

}  // namespace hydragen::decode
