#include "decode/weights.hpp"

#include <cmath>
#include <stdexcept>

namespace hydragen::decode {

std::vector<TensorSpec> tensor_specs(const ModelConfig& model) {
  model.validate();
  const std::int64_t h = model.hidden, q = static_cast<std::int64_t>(model.q_heads) * model.head_dim,
                     kv = static_cast<std::int64_t>(model.kv_heads) * model.head_dim, f = model.ffn;
  std::vector<TensorSpec> specs = {{"model.embed_tokens.weight", Role::embed, -1, model.vocab, h, Split::replicated}};
  for (int l = 0; l < model.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    specs.push_back({p + "input_layernorm.weight", Role::attn_norm, l, h, 0, Split::replicated});
    specs.push_back({p + "self_attn.q_proj.weight", Role::q, l, q, h, Split::rows});
    specs.push_back({p + "self_attn.k_proj.weight", Role::k, l, kv, h, Split::rows});
    specs.push_back({p + "self_attn.v_proj.weight", Role::v, l, kv, h, Split::rows});
    specs.push_back({p + "self_attn.o_proj.weight", Role::o, l, h, q, Split::columns});
    specs.push_back({p + "post_attention_layernorm.weight", Role::mlp_norm, l, h, 0, Split::replicated});
    specs.push_back({p + "mlp.gate_proj.weight", Role::gate, l, f, h, Split::rows});
    specs.push_back({p + "mlp.up_proj.weight", Role::up, l, f, h, Split::rows});
    specs.push_back({p + "mlp.down_proj.weight", Role::down, l, h, f, Split::columns});
  }
  specs.push_back({"model.norm.weight", Role::final_norm, -1, h, 0, Split::replicated});
  specs.push_back({"lm_head.weight", Role::lm_head, -1, model.vocab, h, Split::rows});
  return specs;
}

ShardRange shard_range(const TensorSpec& spec, const ModelShard& shard, int rank) {
  if (rank < 0 || rank >= shard.tp) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " of a " + std::to_string(shard.tp) + "-way shard");
  }
  const ModelConfig& m = shard.model;
  auto range = [](std::int64_t begin, std::int64_t count) { return ShardRange{begin, begin + count, begin + count}; };
  switch (spec.role) {
    case Role::q:
    case Role::o:
      return range(static_cast<std::int64_t>(rank) * shard.q_heads * m.head_dim, static_cast<std::int64_t>(shard.q_heads) * m.head_dim);
    case Role::k:
    case Role::v: {
      // The KV head of the shard's first query head starts its range.
      const int first = rank * shard.q_heads / (m.q_heads / m.kv_heads);
      return range(static_cast<std::int64_t>(first) * m.head_dim, static_cast<std::int64_t>(shard.kv_heads) * m.head_dim);
    }
    case Role::gate:
    case Role::up:
    case Role::down:
      return range(static_cast<std::int64_t>(rank) * shard.ffn, shard.ffn);
    case Role::lm_head: {
      ShardRange r = range(static_cast<std::int64_t>(rank) * shard.vocab_rows, shard.vocab_rows);
      r.valid_end = std::min(r.end, spec.rows);
      return r;
    }
    default:
      return range(0, spec.rows);
  }
}

std::int64_t shard_rows(const TensorSpec& spec, const ModelShard& shard, int rank) {
  const ShardRange r = shard_range(spec, shard, rank);
  return spec.split == Split::rows ? r.end - r.begin : spec.rows;
}

std::int64_t shard_cols(const TensorSpec& spec, const ModelShard& shard, int rank) {
  const ShardRange r = shard_range(spec, shard, rank);
  return spec.split == Split::columns ? r.end - r.begin : spec.cols;
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

class RandomWeights final : public WeightSource {
 public:
  explicit RandomWeights(std::uint64_t seed) : seed_(seed) {}

  std::string describe() const override { return "random weights, seed " + std::to_string(seed_); }
  DType dtype() const override { return DType::bf16; }

  std::vector<float> load(const TensorSpec& spec, const ModelShard& shard, int rank) const override {
    const ShardRange range = shard_range(spec, shard, rank);
    const std::int64_t rows = shard_rows(spec, shard, rank), cols = std::max<std::int64_t>(1, shard_cols(spec, shard, rank));
    const std::int64_t full_cols = std::max<std::int64_t>(1, spec.cols);
    // Uniform on [-a, a] has variance a^2 / 3.
    const double a = spec.is_vector() ? 0.5 : spec.role == Role::embed ? std::sqrt(3.0) : std::sqrt(3.0 / static_cast<double>(spec.cols));
    const double center = spec.is_vector() ? 1.0 : 0.0;
    const std::uint64_t key = splitmix64(seed_ ^ fnv1a(spec.name));
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t row = spec.split == Split::rows ? range.begin + r : r;
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t col = spec.split == Split::columns ? range.begin + c : c;
        float& out = values[static_cast<std::size_t>(r * cols + c)];
        if (spec.split == Split::rows && row >= range.valid_end) {
          out = 0.f;  // the LM head's padding rows
          continue;
        }
        const std::uint64_t bits = splitmix64(key + static_cast<std::uint64_t>(row * full_cols + col));
        const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
        out = bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(center + a * (2 * unit - 1))));
      }
    }
    return values;
  }

 private:
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<WeightSource> random_weights(std::uint64_t seed) { return std::make_unique<RandomWeights>(seed); }

}  // namespace hydragen::decode
