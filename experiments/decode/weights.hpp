#pragma once
// The tensors of a Llama-architecture checkpoint, named as Hugging Face's LlamaForCausalLM names
// them, where one tensor-parallel shard's part of each lies, and where the values come from: drawn
// from a seed (timing: decode time does not depend on weight values) or read from a checkpoint.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/model_config.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::decode {

// What the tensor is, whatever its layer.
enum class Role { embed, attn_norm, q, k, v, o, mlp_norm, gate, up, down, final_norm, lm_head };

// What one shard of an N-way tensor-parallel model holds of a tensor: all of it, a range of its rows
// (output features: Q, K, V, gate, up, LM head) or of its columns (input features: O, down).
enum class Split { replicated, rows, columns };

struct TensorSpec {
  std::string name;  // "model.layers.3.self_attn.q_proj.weight"
  Role role;
  int layer = -1;    // -1 for the embedding, the final norm and the LM head
  // The whole model's shape, row-major as stored: a linear layer is [out features, in features],
  // a norm [H] (cols 0: a vector).
  std::int64_t rows = 0, cols = 0;
  Split split = Split::replicated;

  bool is_vector() const { return cols == 0; }
};

// Every tensor of the model, in checkpoint order: embedding, then per layer the input norm, Q, K, V,
// O, the post-attention norm, gate, up, down; then the final norm and the LM head.
std::vector<TensorSpec> tensor_specs(const ModelConfig& model);

// Rows (Split::rows) or columns (Split::columns) [begin, end) of the whole tensor that shard `rank`
// of `shard` holds; the whole first dimension for a replicated tensor. K and V rows are the shard's
// KV heads: a contiguous range when there are at least N of them, else the one head its query heads
// read (replicated, Megatron style). The LM head's range may run past the vocabulary (its rows are
// padded to a multiple of N): `end` is then the padded end, and the rows past `valid_end` are zeros.
struct ShardRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t valid_end = 0;  // min(end, rows) for the LM head; end otherwise
};
ShardRange shard_range(const TensorSpec& spec, const ModelShard& shard, int rank);

// The shape of the shard's part: [range rows, cols], [rows, range cols], or the whole tensor.
std::int64_t shard_rows(const TensorSpec& spec, const ModelShard& shard, int rank);
std::int64_t shard_cols(const TensorSpec& spec, const ModelShard& shard, int rank);

// Where weight values come from. Values are exactly representable in dtype(), so that every runtime
// (fp32 or fp64 on the host, bf16 on a GPU) computes with the same model.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual std::string describe() const = 0;  // "random weights, seed 1" or "checkpoint DIR (bf16)"
  virtual DType dtype() const = 0;           // bf16 or fp16
  // The shard's part of `spec`, row-major, shard_rows x max(1, shard_cols) values (padding rows 0).
  // Throws std::runtime_error naming the tensor when it cannot be read.
  virtual std::vector<float> load(const TensorSpec& spec, const ModelShard& shard, int rank) const = 0;
};

// Weights drawn from `seed`: each element a function of (seed, tensor name, its index in the whole
// tensor), so a shard's part equals that part of the whole model's tensor. Linear layers uniform
// with variance 1/in-features (activations stay of order one through the layers), the embedding
// uniform of variance 1, norms uniform in [0.5, 1.5]; rounded to bf16.
std::unique_ptr<WeightSource> random_weights(std::uint64_t seed);

}  // namespace hydragen::decode
