#include "decode/model_config.hpp"

#include <stdexcept>
#include <utility>

namespace hydragen::decode {

namespace {

// Each preset is the model's published Hugging Face configuration (config.json); the field names
// there: num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, intermediate_size,
// vocab_size, rope_theta, rms_norm_eps, max_position_embeddings. D = hidden_size / heads.
const std::vector<ModelConfig>& presets() {
  static const std::vector<ModelConfig> all = {
      // huggingface.co/codellama/CodeLlama-7b-hf/blob/main/config.json
      {"codellama-7b", 32, 4096, 32, 32, 128, 11008, 32016, 1e6, 1e-5, 16384},
      // huggingface.co/codellama/CodeLlama-13b-hf/blob/main/config.json
      {"codellama-13b", 40, 5120, 40, 40, 128, 13824, 32016, 1e6, 1e-5, 16384},
      // huggingface.co/codellama/CodeLlama-34b-hf/blob/main/config.json (grouped-query, g = 8)
      {"codellama-34b", 48, 8192, 64, 8, 128, 22016, 32000, 1e6, 1e-5, 16384},
      // huggingface.co/01-ai/Yi-6B-200K/blob/main/config.json (grouped-query, g = 8)
      {"yi-6b-200k", 32, 4096, 32, 4, 128, 11008, 64000, 5e6, 1e-5, 200000},
      // Not a published model: small enough for an fp64 forward pass in a test, grouped-query so that
      // the head mapping is exercised.
      {"smoke", 2, 64, 4, 2, 16, 160, 97, 1e4, 1e-5, 4096},
  };
  return all;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

void ModelConfig::validate() const {
  const std::pair<const char*, int> positive[] = {{"layers", layers}, {"hidden", hidden}, {"q_heads", q_heads},
                                                  {"kv_heads", kv_heads}, {"head_dim", head_dim}, {"ffn", ffn},
                                                  {"vocab", vocab}, {"max_positions", max_positions}};
  for (const auto& [field, value] : positive) {
    require(value > 0, "model " + name + ": " + field + " must be positive, got " + std::to_string(value));
  }
  require(q_heads % kv_heads == 0, "model " + name + ": q_heads " + std::to_string(q_heads) +
                                       " is not a multiple of kv_heads " + std::to_string(kv_heads));
  require(head_dim % 2 == 0, "model " + name + ": head_dim must be even (rotary pairs), got " + std::to_string(head_dim));
  require(rope_theta > 0, "model " + name + ": rope_theta must be positive");
  require(rms_eps > 0, "model " + name + ": rms_eps must be positive");
}

std::int64_t ModelConfig::parameters() const {
  const std::int64_t h = hidden, q = static_cast<std::int64_t>(q_heads) * head_dim,
                     kv = static_cast<std::int64_t>(kv_heads) * head_dim;
  const std::int64_t per_layer = h * q + 2 * h * kv + q * h + 3 * h * ffn + 2 * h;  // Q, K, V, O, MLP, two norms
  return 2 * static_cast<std::int64_t>(vocab) * h + layers * per_layer + h;
}

ModelConfig model_config(std::string_view name) {
  for (const ModelConfig& m : presets()) {
    if (m.name == name) return m;
  }
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelConfig& m : presets()) names.push_back(m.name);
  return names;
}

ModelConfig with_layers(const ModelConfig& model, int layers) {
  require(layers >= 1 && layers <= model.layers, "--layers " + std::to_string(layers) + ": " + model.name + " has " +
                                                     std::to_string(model.layers) + " layers (1 to " +
                                                     std::to_string(model.layers) + ")");
  ModelConfig m = model;
  m.layers = layers;
  return m;
}

ModelShard shard(const ModelConfig& model, int tp) {
  model.validate();
  const std::string where = model.name + " over --tp " + std::to_string(tp) + ": ";
  require(tp >= 1, where + "tp must be at least 1");
  require(model.q_heads % tp == 0, where + std::to_string(model.q_heads) + " query heads do not split evenly");
  require(model.ffn % tp == 0, where + "FFN width " + std::to_string(model.ffn) + " does not split evenly");
  // Fewer KV heads than GPUs: each GPU holds the one KV head its query heads read, which needs the
  // GPUs to divide evenly among the KV heads.
  require(model.kv_heads >= tp ? model.kv_heads % tp == 0 : tp % model.kv_heads == 0,
          where + std::to_string(model.kv_heads) + " KV heads neither split nor replicate evenly");
  ModelShard s;
  s.model = model;
  s.tp = tp;
  s.q_heads = model.q_heads / tp;
  s.kv_heads = model.kv_heads >= tp ? model.kv_heads / tp : 1;
  s.ffn = model.ffn / tp;
  s.vocab_rows = (model.vocab + tp - 1) / tp;
  // Split N ways, each GPU's rows rounded up to a multiple of 8 where the last GPU keeps some: the
  // logits' rows [B, vocab_rows] then start 16-byte aligned, as cuBLAS's Hopper kernels need
  // (CodeLlama's 32016 rows over 8 GPUs, 4002 each, ran an sm80 kernel at a third of the rate).
  const int aligned = (s.vocab_rows + 7) / 8 * 8;
  if (tp > 1 && static_cast<long long>(tp - 1) * aligned < model.vocab) s.vocab_rows = aligned;
  return s;
}

std::int64_t ModelShard::allreduce_bytes_per_token() const {
  return tp == 1 ? 0 : 2LL * model.layers * model.hidden * 2;
}

}  // namespace hydragen::decode
