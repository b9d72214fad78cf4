#include "decode/shard_weights.hpp"

#include <stdexcept>

namespace hydragen::decode {

namespace {

// Rows of `parts` stacked into one buffer: the fused projections (Q, K, V) and (gate, up).
Buffer upload_stacked(const Runtime& rt, const std::vector<std::vector<float>>& parts) {
  std::vector<float> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return rt.upload(all);
}

std::string shard_text(const ModelShard& shard, int rank) {
  return shard.model.name + " (layers " + std::to_string(shard.model.layers) + ", rank " + std::to_string(rank) + " of tp " +
         std::to_string(shard.tp) + ")";
}

}  // namespace

ShardWeights::ShardWeights(const Runtime& runtime, const ModelShard& shard, const WeightSource& source, int rank)
    : runtime_(&runtime), runtime_name_(runtime.name()), shard_(shard), rank_(rank), source_(source.describe()) {
  if (rank < 0 || rank >= shard.tp) {
    throw std::invalid_argument("weights for rank " + std::to_string(rank) + ": a " + std::to_string(shard.tp) +
                                "-way shard has ranks 0 to " + std::to_string(shard.tp - 1));
  }
  const std::vector<TensorSpec> specs = tensor_specs(shard.model);
  auto load = [&](const TensorSpec& spec) { return source.load(spec, shard, rank); };
  layers.resize(static_cast<std::size_t>(shard.model.layers));
  // tensor_specs lists each layer's tensors in a fixed order: norm, Q, K, V, O, norm, gate, up, down.
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    if (spec.layer < 0) {
      Buffer& dst = spec.role == Role::embed ? embed : spec.role == Role::final_norm ? final_norm : lm_head;
      dst = runtime.upload(load(spec));
      continue;
    }
    Layer& l = layers[static_cast<std::size_t>(spec.layer)];
    switch (spec.role) {
      case Role::attn_norm: l.attn_norm = runtime.upload(load(spec)); break;
      case Role::q: l.wqkv = upload_stacked(runtime, {load(spec), load(specs[i + 1]), load(specs[i + 2])}); break;
      case Role::o: l.wo = runtime.upload(load(spec)); break;
      case Role::mlp_norm: l.mlp_norm = runtime.upload(load(spec)); break;
      case Role::gate: l.gate_up = upload_stacked(runtime, {load(spec), load(specs[i + 1])}); break;
      case Role::down: l.down = runtime.upload(load(spec)); break;
      default: break;  // K, V and up were stacked with the tensor before them
    }
  }
}

std::string ShardWeights::mismatch(const Runtime& runtime, const ModelShard& shard, int rank) const {
  const bool same_shard = shard.model.name == shard_.model.name && shard.model.layers == shard_.model.layers &&
                          shard.tp == shard_.tp && rank == rank_;
  const bool same_runtime = &runtime == runtime_;
  if (same_shard && same_runtime) return {};
  // Two runtimes of one kind share a name: say which differs.
  return "weights of " + shard_text(shard_, rank_) + " on " + runtime_name_ + (same_runtime ? "" : " (another runtime)") +
         " given to a decoder of " + shard_text(shard, rank) + " on " + runtime.name();
}

std::size_t ShardWeights::bytes() const {
  std::size_t total = embed.bytes() + final_norm.bytes() + lm_head.bytes();
  for (const Layer& l : layers) {
    total += l.attn_norm.bytes() + l.wqkv.bytes() + l.wo.bytes() + l.mlp_norm.bytes() + l.gate_up.bytes() + l.down.bytes();
  }
  return total;
}

}  // namespace hydragen::decode
