#pragma once
// Hugging Face checkpoints (safetensors) as a WeightSource: a LlamaForCausalLM model directory read
// in place, one shard's slice at a time, and written (tests, and small checkpoints to share).
#include <memory>
#include <string>

#include "decode/model_config.hpp"
#include "decode/weights.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::decode {

// The checkpoint in `dir`: one model.safetensors, or the shards that model.safetensors.index.json's
// "weight_map" names. Every header (and the index) is read and every tensor of tensor_specs(model)
// checked (present, shape, BF16 or F16 with one dtype for all, data inside its file) before this
// returns; so is dir/config.json against `model` where it exists. The first problem found throws one
// std::runtime_error naming the tensor (or config field), the file, and what was expected and found.
// Tensors the model does not use (rotary buffers, layers past model.layers) are ignored.
// load() then reads only the bytes of the shard's slice, widened exactly to float.
std::unique_ptr<WeightSource> checkpoint_weights(const std::string& dir, const ModelConfig& model);

// Writes the whole model (tp = 1) from `source` to `dir` (created if missing) in `dtype` (bf16 or
// fp16; values rounded to nearest even): one model.safetensors when files == 1, else `files` shards
// model-0000i-of-0000n.safetensors of about equal size with model.safetensors.index.json; and a
// config.json with Hugging Face's field names. Replaces the other layout's single file or index, so
// that checkpoint_weights(dir) reads what was written. Throws std::invalid_argument for a dtype other
// than bf16/fp16 or files outside [1, number of tensors], std::runtime_error when a file cannot be written.
void write_checkpoint(const std::string& dir, const ModelConfig& model, const WeightSource& source, DType dtype,
                      int files);

}  // namespace hydragen::decode
