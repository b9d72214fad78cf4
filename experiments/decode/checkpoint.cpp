#include "decode/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decode/checkpoint_files.hpp"

namespace hydragen::decode {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The safetensors format caps its header at 100 MB: a larger length means the file is not one.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Where the expected shape comes from, in the model's terms.
std::string shape_reason(const TensorSpec& spec, const ModelConfig& m) {
  const std::string h = "hidden " + std::to_string(m.hidden), d = " x head_dim " + std::to_string(m.head_dim);
  const std::string q = "q_heads " + std::to_string(m.q_heads) + d, kv = "kv_heads " + std::to_string(m.kv_heads) + d;
  const std::string f = "ffn " + std::to_string(m.ffn), v = "vocab " + std::to_string(m.vocab);
  switch (spec.role) {
    case Role::embed:
    case Role::lm_head: return v + ", " + h;
    case Role::q: return q + ", " + h;
    case Role::k:
    case Role::v: return kv + ", " + h;
    case Role::o: return h + ", " + q;
    case Role::gate:
    case Role::up: return f + ", " + h;
    case Role::down: return h + ", " + f;
    default: return h;  // the norms
  }
}

std::optional<DType> parse_safetensors_dtype(const std::string& name) {
  if (name == "BF16") return DType::bf16;
  if (name == "F16") return DType::fp16;
  return std::nullopt;
}

// Widens `count` little-endian 16-bit values (exact: every bf16 and fp16 value is a float).
void widen(const unsigned char* src, std::size_t count, DType dtype, float* dst) {
  for (std::size_t i = 0; i < count; ++i) {
    const auto bits = static_cast<std::uint16_t>(src[2 * i] | src[2 * i + 1] << 8);
    dst[i] = dtype == DType::bf16 ? bf16_bits_to_float(bits) : half_bits_to_float(bits);
  }
}

// A file read at offsets with pread, so that concurrent load() calls share no file position.
class File {
 public:
  File(const fs::path& path, std::string name) : name_(std::move(name)) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error(name_ + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw std::runtime_error(name_ + ": not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t size() const { return size_; }

  // Bytes [offset, offset + count) into dst; `what` starts the error message.
  void read(std::uint64_t offset, std::size_t count, unsigned char* dst, const std::string& what) const {
    while (count > 0) {
      const ssize_t got = ::pread(fd_, dst, count, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw std::runtime_error(what + ": " + (got < 0 ? std::strerror(errno) : "the file ends early"));
      dst += got;
      offset += static_cast<std::uint64_t>(got);
      count -= static_cast<std::size_t>(got);
    }
  }

 private:
  std::string name_;  // inside the checkpoint directory
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// A safetensors file's header: 8-byte little-endian length N, then N bytes of JSON.
struct Header {
  json tensors;                  // name -> {"dtype", "shape", "data_offsets"}, and "__metadata__"
  std::uint64_t data_start = 0;  // 8 + N: data_offsets count from here
};

Header read_header(const File& file) {
  if (file.size() < 8) {
    throw std::runtime_error(file.name() + ": " + std::to_string(file.size()) + " bytes, too short for a safetensors file");
  }
  unsigned char length_bytes[8];
  file.read(0, 8, length_bytes, file.name());
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
  if (length > kMaxHeaderBytes || length > file.size() - 8) {
    throw std::runtime_error(file.name() + ": header of " + std::to_string(length) + " bytes does not fit the file (" +
                             std::to_string(file.size()) + " bytes): truncated, or not a safetensors file");
  }
  std::string text(length, '\0');
  file.read(8, length, reinterpret_cast<unsigned char*>(text.data()), file.name());
  Header header{json::parse(text, nullptr, false), 8 + length};
  if (!header.tensors.is_object()) throw std::runtime_error(file.name() + ": the header is not a JSON object");
  return header;
}

json read_json(const fs::path& path, const std::string& name) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(name + ": cannot open");
  json value = json::parse(in, nullptr, false);
  if (!value.is_object()) throw std::runtime_error(name + ": not a JSON object");
  return value;
}

// model.safetensors.index.json's "weight_map": tensor name -> file name.
std::map<std::string, std::string> read_weight_map(const fs::path& path) {
  const json index = read_json(path, kIndexFile);
  if (!index.contains("weight_map") || !index.at("weight_map").is_object()) {
    throw std::runtime_error(kIndexFile + ": no \"weight_map\" object");
  }
  std::map<std::string, std::string> file_of;
  for (const auto& item : index.at("weight_map").items()) {
    if (!item.value().is_string()) {
      throw std::runtime_error(kIndexFile + ": weight_map[\"" + item.key() + "\"] is not a file name");
    }
    file_of[item.key()] = item.value().get<std::string>();
  }
  return file_of;
}

// A non-negative integer array, or nullopt when `value` is anything else.
std::optional<std::vector<std::int64_t>> index_array(const json& value) {
  if (!value.is_array()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const json& x : value) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < 0) return std::nullopt;
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

// dir/config.json against the model, by Hugging Face's field names and LlamaConfig's defaults.
void check_config(const json& config, const ModelConfig& model) {
  auto fail = [&](const std::string& field, const std::string& found, const std::string& expected) {
    throw std::runtime_error(kConfigFile + ": " + field + " " + found + ", expected " + expected + " (" + model.name + ")");
  };
  auto integer = [&](const char* field, std::optional<std::int64_t> fallback = std::nullopt) -> std::int64_t {
    if (!config.contains(field) && fallback) return *fallback;
    if (!config.contains(field)) throw std::runtime_error(kConfigFile + ": no " + field);
    if (!config.at(field).is_number_integer()) fail(field, config.at(field).dump(), "an integer");
    return config.at(field).get<std::int64_t>();
  };
  auto number = [&](const char* field, double fallback) -> double {
    if (!config.contains(field)) return fallback;
    if (!config.at(field).is_number()) fail(field, config.at(field).dump(), "a number");
    return config.at(field).get<double>();
  };

  const std::int64_t q_heads = integer("num_attention_heads");
  const struct {
    const char* field;
    std::int64_t found, expected;
  } exact[] = {{"hidden_size", integer("hidden_size"), model.hidden},
               {"num_attention_heads", q_heads, model.q_heads},
               {"num_key_value_heads", integer("num_key_value_heads", q_heads), model.kv_heads},
               {"intermediate_size", integer("intermediate_size"), model.ffn},
               {"vocab_size", integer("vocab_size"), model.vocab}};
  for (const auto& f : exact) {
    if (f.found != f.expected) fail(f.field, std::to_string(f.found), std::to_string(f.expected));
  }
  // More layers than the model is fine: a model shortened by --layers runs the checkpoint's first
  // model.layers layers, and tensor_specs never asks for the rest.
  const std::int64_t layers = integer("num_hidden_layers");
  if (layers < model.layers) fail("num_hidden_layers", std::to_string(layers), std::to_string(model.layers) + " or more");
  // Relative, not exact: some converters write float32-rounded values (9.999999747378752e-06).
  const struct {
    const char* field;
    double found, expected;
  } approx[] = {{"rope_theta", number("rope_theta", 1e4), model.rope_theta},
               {"rms_norm_eps", number("rms_norm_eps", 1e-6), model.rms_eps}};
  for (const auto& f : approx) {
    if (std::abs(f.found - f.expected) > 1e-6 * f.expected) fail(f.field, json(f.found).dump(), json(f.expected).dump());
  }
  if (config.contains("rope_scaling") && !config.at("rope_scaling").is_null()) {
    fail("rope_scaling", config.at("rope_scaling").dump(), "null (the decoder applies plain rotary embeddings)");
  }
}

// Where one tensor's data lies, and its shape as TensorSpec gives it.
struct Entry {
  std::size_t file = 0;             // index into CheckpointWeights::files_
  std::uint64_t offset = 0;         // of its first byte in that file
  std::int64_t rows = 0, cols = 0;  // cols 0 for a vector
};

class CheckpointWeights final : public WeightSource {
 public:
  CheckpointWeights(const std::string& dir, const ModelConfig& model) : dir_(dir) {
    const fs::path root(dir);
    if (!fs::is_directory(root)) throw std::runtime_error("no such directory");
    if (fs::exists(root / kConfigFile)) check_config(read_json(root / kConfigFile, kConfigFile), model);
    // As transformers does, a single model.safetensors wins over an index.
    const bool single = fs::exists(root / kSingleFile);
    if (!single && !fs::exists(root / kIndexFile)) {
      throw std::runtime_error("neither " + kSingleFile + " nor " + kIndexFile + " is there");
    }
    const std::map<std::string, std::string> file_of = single ? std::map<std::string, std::string>{}
                                                              : read_weight_map(root / kIndexFile);
    std::map<std::string, std::size_t> file_number;
    for (const auto& [tensor, name] : file_of) file_number.emplace(name, file_number.size());
    if (single) file_number.emplace(kSingleFile, 0);
    files_.resize(file_number.size());
    std::vector<Header> headers(file_number.size());
    for (const auto& [name, i] : file_number) {
      files_[i] = std::make_unique<File>(root / name, name);
      headers[i] = read_header(*files_[i]);
    }

    const std::vector<TensorSpec> specs = tensor_specs(model);
    for (const TensorSpec& spec : specs) {
      std::size_t i = 0;
      if (!single) {
        const auto it = file_of.find(spec.name);
        if (it == file_of.end()) throw std::runtime_error(spec.name + ": not in " + kIndexFile + "'s weight_map");
        i = file_number.at(it->second);
      }
      if (!headers[i].tensors.contains(spec.name)) {
        throw std::runtime_error(spec.name + ": not in " + files_[i]->name() +
                                 (single ? "" : " (where " + kIndexFile + " puts it)"));
      }
      entries_.emplace(spec.name, check_entry(spec, model, headers[i].tensors.at(spec.name), i, headers[i].data_start,
                                              specs.front().name));
    }
  }

  std::string describe() const override {
    return "checkpoint " + dir_ + " (" + std::string(dtype_name(dtype())) + ", " + std::to_string(files_.size()) +
           (files_.size() == 1 ? " file)" : " files)");
  }

  DType dtype() const override { return *dtype_; }

  std::vector<float> load(const TensorSpec& spec, const ModelShard& shard, int rank) const override {
    const auto it = entries_.find(spec.name);
    if (it == entries_.end() || it->second.rows != spec.rows || it->second.cols != spec.cols) {
      throw std::runtime_error("checkpoint " + dir_ + ": " + spec.name + " " + shape_text(stored_shape(spec)) +
                               " is not a tensor of the model it was opened for");
    }
    const Entry& entry = it->second;
    const File& file = *files_[entry.file];
    const std::string what = "checkpoint " + dir_ + ": " + spec.name + " in " + file.name();
    const ShardRange range = shard_range(spec, shard, rank);
    const std::int64_t rows = shard_rows(spec, shard, rank), cols = std::max<std::int64_t>(1, shard_cols(spec, shard, rank));
    const std::int64_t full_cols = std::max<std::int64_t>(1, spec.cols);
    std::vector<float> values(static_cast<std::size_t>(rows * cols), 0.f);  // [rows, cols]; LM head padding rows stay 0
    if (spec.split == Split::columns) {
      for (std::int64_t r = 0; r < rows; ++r) {
        read_values(file, entry.offset + static_cast<std::uint64_t>(2 * (r * full_cols + range.begin)),
                    static_cast<std::size_t>(cols), values.data() + r * cols, what);
      }
    } else {
      // Split::rows or replicated: rows [begin, valid_end) of the whole tensor, contiguous in the file.
      read_values(file, entry.offset + static_cast<std::uint64_t>(2 * range.begin * full_cols),
                  static_cast<std::size_t>((range.valid_end - range.begin) * full_cols), values.data(), what);
    }
    return values;
  }

 private:
  // The tensor's header entry against `spec`: dtype (one for the whole checkpoint, first set by the
  // tensor `first`), shape, and data inside the file.
  Entry check_entry(const TensorSpec& spec, const ModelConfig& model, const json& entry, std::size_t i,
                    std::uint64_t data_start, const std::string& first) {
    const File& file = *files_[i];
    const std::string where = spec.name + " in " + file.name() + ": ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.at("dtype").is_string()) {
      throw std::runtime_error(where + "no \"dtype\" string");
    }
    const std::string dtype_text = entry.at("dtype").get<std::string>();
    const std::optional<DType> dtype = parse_safetensors_dtype(dtype_text);
    if (!dtype) throw std::runtime_error(where + "dtype " + dtype_text + ", expected BF16 or F16");
    if (!dtype_) dtype_ = dtype;
    if (*dtype != *dtype_) {
      throw std::runtime_error(where + "dtype " + dtype_text + ", but " + first + " is " + safetensors_dtype(*dtype_) +
                               " (one dtype for every tensor)");
    }

    const auto shape = index_array(entry.contains("shape") ? entry.at("shape") : json());
    if (!shape) throw std::runtime_error(where + "no \"shape\" array of sizes");
    const std::vector<std::int64_t> expected = stored_shape(spec);
    if (*shape != expected) {
      throw std::runtime_error(where + "shape " + shape_text(*shape) + ", expected " + shape_text(expected) + " (" +
                               model.name + ": " + shape_reason(spec, model) + ")");
    }

    const auto offsets = index_array(entry.contains("data_offsets") ? entry.at("data_offsets") : json());
    if (!offsets || offsets->size() != 2) throw std::runtime_error(where + "no \"data_offsets\" pair");
    const auto begin = static_cast<std::uint64_t>((*offsets)[0]), end = static_cast<std::uint64_t>((*offsets)[1]);
    const auto bytes = static_cast<std::uint64_t>(2 * elements(spec));
    const std::string offsets_text = "data_offsets " + shape_text(*offsets);
    if (end < begin || end - begin != bytes) {
      throw std::runtime_error(where + offsets_text + " hold " + std::to_string(static_cast<std::int64_t>(end - begin)) +
                               " bytes, expected " + std::to_string(bytes) + " (" + shape_text(expected) + " x 2)");
    }
    if (end > file.size() - data_start) {
      throw std::runtime_error(where + offsets_text + " run past the file's " + std::to_string(file.size() - data_start) +
                               " bytes of data: truncated?");
    }
    return {i, data_start + begin, spec.rows, spec.cols};
  }

  // `count` values at byte `offset`, widened into dst; staged in chunks so that a large tensor (an LM
  // head is hundreds of MB) needs no second copy of itself.
  void read_values(const File& file, std::uint64_t offset, std::size_t count, float* dst, const std::string& what) const {
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    std::vector<unsigned char> bytes(2 * std::min(count, kChunk));  // [min(count, kChunk)] x 2 bytes
    for (std::size_t done = 0; done < count; done += kChunk) {
      const std::size_t n = std::min(kChunk, count - done);
      file.read(offset + 2 * done, 2 * n, bytes.data(), what);
      widen(bytes.data(), n, *dtype_, dst + done);
    }
  }

  std::string dir_;
  std::vector<std::unique_ptr<File>> files_;
  std::map<std::string, Entry> entries_;  // the model's tensors only
  std::optional<DType> dtype_;            // set by the first tensor checked
};

}  // namespace

std::unique_ptr<WeightSource> checkpoint_weights(const std::string& dir, const ModelConfig& model) {
  model.validate();
  try {
    return std::make_unique<CheckpointWeights>(dir, model);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("checkpoint " + dir + ": " + e.what());
  }
}

}  // namespace hydragen::decode
