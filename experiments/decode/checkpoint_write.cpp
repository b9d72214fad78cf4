// write_checkpoint (checkpoint.hpp): a model from a WeightSource as a Hugging Face checkpoint.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "decode/checkpoint.hpp"
#include "decode/checkpoint_files.hpp"

namespace hydragen::decode {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Rounds to nearest even and packs as little-endian 16-bit values.
std::vector<char> narrow(const std::vector<float>& values, DType dtype) {
  std::vector<char> bytes(2 * values.size());  // [values] x 2 bytes
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = dtype == DType::bf16 ? float_to_bf16_bits(values[i]) : float_to_half_bits(values[i]);
    bytes[2 * i] = static_cast<char>(bits & 0xFF);
    bytes[2 * i + 1] = static_cast<char>(bits >> 8);
  }
  return bytes;
}

void write_json(const fs::path& path, const json& value) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write");
}

// Which file each tensor goes to: runs of consecutive tensors, moving to the next file once the files
// so far hold their share of the elements, or when each later file needs one of the tensors left.
std::vector<int> assign_files(const std::vector<TensorSpec>& specs, int files) {
  std::int64_t total = 0;
  for (const TensorSpec& spec : specs) total += elements(spec);
  std::vector<int> file_of(specs.size());
  int f = 0;
  std::int64_t before = 0;  // elements of the tensors placed so far
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const bool share_done = before * files >= (f + 1) * total;
    const bool rest_needed = specs.size() - i == static_cast<std::size_t>(files - 1 - f);
    if (i > 0 && f + 1 < files && (share_done || rest_needed)) ++f;
    file_of[i] = f;
    before += elements(specs[i]);
  }
  return file_of;
}

std::string shard_file_name(int file, int files) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", file + 1, files);
  return name;
}

// One safetensors file of `specs`, the whole tensors from `source` narrowed to dtype.
void write_safetensors(const fs::path& path, const std::vector<const TensorSpec*>& specs, const ModelShard& whole,
                       const WeightSource& source, DType dtype) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t offset = 0;
  for (const TensorSpec* spec : specs) {
    const auto bytes = static_cast<std::uint64_t>(2 * elements(*spec));
    header[spec->name] = {{"dtype", safetensors_dtype(dtype)},
                          {"shape", stored_shape(*spec)},
                          {"data_offsets", json::array({offset, offset + bytes})}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format pads the header so that the data is 8-byte aligned
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(static_cast<std::uint64_t>(text.size()) >> (8 * i) & 0xFF);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(length, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorSpec* spec : specs) {
    const std::vector<char> bytes = narrow(source.load(*spec, whole, 0), dtype);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write");
}

// Hugging Face's LlamaConfig field names.
json hf_config(const ModelConfig& m, DType dtype) {
  return {{"architectures", json::array({"LlamaForCausalLM"})},
          {"model_type", "llama"},
          {"hidden_act", "silu"},
          {"hidden_size", m.hidden},
          {"intermediate_size", m.ffn},
          {"num_hidden_layers", m.layers},
          {"num_attention_heads", m.q_heads},
          {"num_key_value_heads", m.kv_heads},
          {"head_dim", m.head_dim},
          {"vocab_size", m.vocab},
          {"rope_theta", m.rope_theta},
          {"rope_scaling", nullptr},
          {"rms_norm_eps", m.rms_eps},
          {"max_position_embeddings", m.max_positions},
          {"tie_word_embeddings", false},
          {"torch_dtype", dtype == DType::bf16 ? "bfloat16" : "float16"}};
}

}  // namespace

void write_checkpoint(const std::string& dir, const ModelConfig& model, const WeightSource& source, DType dtype,
                      int files) {
  const std::vector<TensorSpec> specs = tensor_specs(model);
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    throw std::invalid_argument("write_checkpoint: dtype " + std::string(dtype_name(dtype)) + " (bf16 or fp16)");
  }
  if (files < 1 || static_cast<std::size_t>(files) > specs.size()) {
    throw std::invalid_argument("write_checkpoint: files " + std::to_string(files) + " (1 to " +
                                std::to_string(specs.size()) + ", the model's tensor count)");
  }
  const fs::path root(dir);
  fs::create_directories(root);
  const ModelShard whole = shard(model, 1);
  const std::vector<int> file_of = assign_files(specs, files);
  json weight_map = json::object();
  std::int64_t total_bytes = 0;
  for (int f = 0; f < files; ++f) {
    const std::string name = files == 1 ? kSingleFile : shard_file_name(f, files);
    std::vector<const TensorSpec*> in_file;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (file_of[i] != f) continue;
      in_file.push_back(&specs[i]);
      weight_map[specs[i].name] = name;
      total_bytes += 2 * elements(specs[i]);
    }
    write_safetensors(root / name, in_file, whole, source, dtype);
  }
  if (files > 1) write_json(root / kIndexFile, {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}});
  // The other layout's leftovers would be read instead (a single file wins) or go stale.
  fs::remove(root / (files == 1 ? kIndexFile : kSingleFile));
  write_json(root / kConfigFile, hf_config(model, dtype));
}

}  // namespace hydragen::decode
