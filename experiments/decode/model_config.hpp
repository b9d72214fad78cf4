#pragma once
// The shapes of the decoders hydragen-decode runs (issue: end-to-end decoding): Llama-architecture
// models (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU MLP, untied LM head), by name,
// and the share of one GPU of an N-way tensor-parallel run.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hydragen::decode {

struct ModelConfig {
  std::string name;
  int layers = 0;
  int hidden = 0;      // model width H
  int q_heads = 0;     // Hq
  int kv_heads = 0;    // Hkv (< Hq: grouped-query attention)
  int head_dim = 0;    // D; Hq * D == H for every preset
  int ffn = 0;         // SwiGLU width F (gate and up projections H -> F, down F -> H)
  int vocab = 0;       // V
  double rope_theta = 0;
  double rms_eps = 0;
  int max_positions = 0;  // the longest context the model was trained for

  void validate() const;  // throws std::invalid_argument naming the field
  std::int64_t parameters() const;  // embedding + layers + final norm + LM head
};

// The presets: codellama-7b, codellama-13b, codellama-34b (the paper's Tables 1-6, Fig. 3),
// yi-6b-200k (Fig. 5), and smoke (a tiny model for CPU runs and tests). An unknown name throws
// std::invalid_argument listing the known ones.
ModelConfig model_config(std::string_view name);
std::vector<std::string> model_names();

// The same model with `layers` layers (1 to the preset's count): a shorter run of the same shapes.
ModelConfig with_layers(const ModelConfig& model, int layers);

// One GPU's share of an N-way tensor-parallel run (Megatron-style): query heads, FFN and LM head
// split N ways; KV heads split too, or replicated where there are fewer than N (each GPU then holds
// the one its query heads read). Every split must be exact except the LM head's rows, padded as
// Megatron pads the vocabulary: to a multiple of N, and of 8 per GPU (shard() says when).
struct ModelShard {
  ModelConfig model;  // the whole model
  int tp = 1;
  int q_heads = 0, kv_heads = 0, ffn = 0, vocab_rows = 0;  // this GPU's

  // Bytes one GPU sends into all-reduces per token of a step: two per layer (after the attention's
  // output projection and after the MLP), each a bf16 vector of H; 0 when tp = 1. The LM head's
  // argmax over shards exchanges one (value, index) pair per shard and token, not counted.
  std::int64_t allreduce_bytes_per_token() const;
};

ModelShard shard(const ModelConfig& model, int tp);  // throws std::invalid_argument if a split is not exact

}  // namespace hydragen::decode
