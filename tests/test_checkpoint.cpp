// Hugging Face checkpoints: what write_checkpoint writes, checkpoint_weights reads back exactly, whole
// or as any tensor-parallel shard's slice; a checkpoint that does not fit the model is refused with
// one error naming the tensor (or config field) and the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "decode/checkpoint.hpp"
#include "decode/model_config.hpp"
#include "decode/weights.hpp"

namespace hydragen::decode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A fresh directory named after the test (and the process: builds may run the tests at once), removed
// when it goes out of scope.
class TempDir {
 public:
  TempDir()
      : path_(fs::path(::testing::TempDir()) /
              ("hydragen_checkpoint_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               "_" + std::to_string(::getpid()) + "_" + std::to_string(count_++))) {
    fs::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string str() const { return path_.string(); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  static inline int count_ = 0;  // a test may need two
  fs::path path_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Rewrites a safetensors file's JSON header through `edit`, keeping its data (offsets are relative to it).
void edit_header(const fs::path& path, const std::function<void(json&)>& edit) {
  const std::string bytes = read_bytes(path);
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  json header = json::parse(bytes.substr(8, length));
  edit(header);
  const std::string text = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(text.size() >> (8 * i) & 0xFF);
  write_bytes(path, out + text + bytes.substr(8 + length));
}

void edit_json(const fs::path& path, const std::function<void(json&)>& edit) {
  json value = json::parse(read_bytes(path));
  edit(value);
  write_bytes(path, value.dump());
}

// What `rank` of `s` holds of a whole tensor [rows, max(1, cols)], from shard_range alone; rows past the
// vocabulary (the LM head's padding) are 0.
std::vector<float> slice(const std::vector<float>& whole, const TensorSpec& spec, const ModelShard& s, int rank) {
  if (spec.split == Split::replicated) return whole;
  const ShardRange r = shard_range(spec, s, rank);
  const std::int64_t cols = std::max<std::int64_t>(1, spec.cols);
  std::vector<float> out;
  if (spec.split == Split::rows) {
    for (std::int64_t row = r.begin; row < r.end; ++row) {
      for (std::int64_t c = 0; c < cols; ++c) out.push_back(row < spec.rows ? whole[static_cast<std::size_t>(row * cols + c)] : 0.f);
    }
  } else {
    for (std::int64_t row = 0; row < spec.rows; ++row) {
      for (std::int64_t c = r.begin; c < r.end; ++c) out.push_back(whole[static_cast<std::size_t>(row * cols + c)]);
    }
  }
  return out;
}

std::vector<float> rounded(std::vector<float> values, DType dtype) {
  for (float& v : values) v = static_cast<float>(round_through(v, dtype));
  return values;
}

const ModelConfig kSmoke = model_config("smoke");  // 2 layers, H 64, Hq 4, Hkv 2, D 16, F 160, V 97

TEST(Checkpoint, ReadsBackEveryTensorAndEveryShardsSlice) {
  const auto source = random_weights(7);
  for (const DType dtype : {DType::bf16, DType::fp16}) {
    for (const int files : {1, 3}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ", " + std::to_string(files) + " files");
      const TempDir dir;
      write_checkpoint(dir.str(), kSmoke, *source, dtype, files);
      const auto weights = checkpoint_weights(dir.str(), kSmoke);
      EXPECT_EQ(weights->dtype(), dtype);
      EXPECT_EQ(weights->describe(), "checkpoint " + dir.str() + " (" + std::string(dtype_name(dtype)) + ", " +
                                         std::to_string(files) + (files == 1 ? " file)" : " files)"));
      EXPECT_EQ(fs::exists(dir / "model.safetensors"), files == 1);
      EXPECT_EQ(fs::exists(dir / "model.safetensors.index.json"), files == 3);
      EXPECT_EQ(fs::exists(dir / "model-00003-of-00003.safetensors"), files == 3);

      const ModelShard whole = shard(kSmoke, 1);
      for (const TensorSpec& spec : tensor_specs(kSmoke)) {
        SCOPED_TRACE(spec.name);
        // bf16: the source's values exactly (they are bf16 already); fp16: those rounded to fp16.
        const std::vector<float> all = weights->load(spec, whole, 0);
        ASSERT_EQ(all, rounded(source->load(spec, whole, 0), dtype));
        // tp 2 splits the KV heads, tp 4 replicates them; both pad the 97 LM head rows.
        for (const int tp : {2, 4}) {
          const ModelShard part = shard(kSmoke, tp);
          for (int rank = 0; rank < tp; ++rank) {
            SCOPED_TRACE("tp " + std::to_string(tp) + " rank " + std::to_string(rank));
            const std::vector<float> loaded = weights->load(spec, part, rank);
            EXPECT_EQ(static_cast<std::int64_t>(loaded.size()),
                      shard_rows(spec, part, rank) * std::max<std::int64_t>(1, shard_cols(spec, part, rank)));
            EXPECT_EQ(loaded, slice(all, spec, part, rank));
          }
        }
      }
    }
  }
}

TEST(Checkpoint, LmHeadPaddingRowsAreZero) {
  const auto source = random_weights(3);
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *source, DType::bf16, 1);
  const TensorSpec lm_head = tensor_specs(kSmoke).back();
  ASSERT_EQ(lm_head.name, "lm_head.weight");
  const std::vector<float> all = source->load(lm_head, shard(kSmoke, 1), 0);        // [97, 64]
  // Two GPUs hold 56 rows each (a multiple of 8): the second rows 56..111, of which 56..96 exist.
  const std::vector<float> last = checkpoint_weights(dir.str(), kSmoke)->load(lm_head, shard(kSmoke, 2), 1);  // [56, 64]
  ASSERT_EQ(last.size(), 56u * 64);
  EXPECT_EQ(std::vector<float>(last.begin(), last.begin() + 41 * 64), std::vector<float>(all.begin() + 56 * 64, all.end()));
  EXPECT_EQ(std::vector<float>(last.begin() + 41 * 64, last.end()), std::vector<float>(15 * 64, 0.f));
}

TEST(Checkpoint, AShorterModelReadsTheFirstLayers) {
  const auto source = random_weights(5);
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *source, DType::bf16, 3);
  const ModelConfig one = with_layers(kSmoke, 1);
  const auto weights = checkpoint_weights(dir.str(), one);
  for (const TensorSpec& spec : tensor_specs(one)) {
    EXPECT_EQ(weights->load(spec, shard(one, 1), 0), source->load(spec, shard(one, 1), 0)) << spec.name;
  }
  // Not the other way round.
  const TempDir short_dir;
  write_checkpoint(short_dir.str(), one, *source, DType::bf16, 1);
  EXPECT_THAT([&] { checkpoint_weights(short_dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("config.json: num_hidden_layers 1, expected 2 or more (smoke)")));
}

TEST(Checkpoint, RefusesATensorOfTheWrongShapeNamingItsFileAndTheModelsNumbers) {
  ModelConfig four_kv = kSmoke;
  four_kv.kv_heads = 4;
  const TempDir dir;
  write_checkpoint(dir.str(), four_kv, *random_weights(1), DType::bf16, 3);
  fs::remove(dir / "config.json");  // else its num_key_value_heads is what is refused
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(AllOf(
                  HasSubstr("checkpoint " + dir.str() + ": "),
                  HasSubstr("model.layers.0.self_attn.k_proj.weight in model-00001-of-00003.safetensors: shape [64, 64], "
                            "expected [32, 64] (smoke: kv_heads 2 x head_dim 16, hidden 64)"))));
  // A norm stored as a matrix.
  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  edit_header(dir / "model.safetensors", [](json& h) { h["model.norm.weight"]["shape"] = {64, 1}; });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model.norm.weight in model.safetensors: shape [64, 1], expected [64]")));
}

TEST(Checkpoint, RefusesAMissingTensorFileOrDirectory) {
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  edit_header(dir / "model.safetensors", [](json& h) { h.erase("model.layers.1.mlp.down_proj.weight"); });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model.layers.1.mlp.down_proj.weight: not in model.safetensors")));

  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 3);
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));  // the single file would shadow the shards
  edit_json(dir / "model.safetensors.index.json", [](json& index) { index["weight_map"].erase("lm_head.weight"); });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("lm_head.weight: not in model.safetensors.index.json's weight_map")));

  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 3);
  edit_header(dir / "model-00001-of-00003.safetensors", [](json& h) { h.erase("model.embed_tokens.weight"); });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr(
                  "model.embed_tokens.weight: not in model-00001-of-00003.safetensors (where model.safetensors.index.json puts it)")));

  fs::remove(dir / "model-00002-of-00003.safetensors");
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model-00002-of-00003.safetensors: cannot open")));

  fs::remove(dir / "model.safetensors.index.json");
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("neither model.safetensors nor model.safetensors.index.json")));
  EXPECT_THAT([&] { checkpoint_weights(dir.str() + "/absent", kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("checkpoint " + dir.str() + "/absent: no such directory")));
}

TEST(Checkpoint, RefusesADtypeOtherThanBf16OrFp16AndMixedDtypes) {
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  edit_header(dir / "model.safetensors", [](json& h) { h["lm_head.weight"]["dtype"] = "F32"; });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("lm_head.weight in model.safetensors: dtype F32, expected BF16 or F16")));

  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  edit_header(dir / "model.safetensors", [](json& h) { h["model.layers.1.self_attn.v_proj.weight"]["dtype"] = "F16"; });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model.layers.1.self_attn.v_proj.weight in model.safetensors: "
                                                          "dtype F16, but model.embed_tokens.weight is BF16")));
}

TEST(Checkpoint, RefusesDataOutsideTheFile) {
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  const fs::path file = dir / "model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 2);  // the LM head's data is written last
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(AllOf(HasSubstr("lm_head.weight in model.safetensors: data_offsets"),
                                                      HasSubstr("truncated?"))));
  fs::resize_file(file, 100);
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model.safetensors: header of")));

  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  edit_header(file, [](json& h) { h["model.norm.weight"]["data_offsets"][1] = h["model.norm.weight"]["data_offsets"][0]; });
  EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); },
              ThrowsMessage<std::runtime_error>(HasSubstr("model.norm.weight in model.safetensors: data_offsets")));
}

TEST(Checkpoint, RefusesAConfigThatIsAnotherModel) {
  const TempDir dir;
  write_checkpoint(dir.str(), kSmoke, *random_weights(1), DType::bf16, 1);
  const fs::path config = dir / "config.json";
  const json written = json::parse(read_bytes(config));
  EXPECT_EQ(written.at("num_key_value_heads"), 2);
  EXPECT_EQ(written.at("rms_norm_eps"), 1e-5);

  struct Case {
    std::function<void(json&)> edit;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {[](json& j) { j["hidden_size"] = 128; }, "config.json: hidden_size 128, expected 64 (smoke)"},
           {[](json& j) { j["num_attention_heads"] = 8; }, "num_attention_heads 8, expected 4"},
           // Absent, it defaults to num_attention_heads (multi-head attention).
           {[](json& j) { j.erase("num_key_value_heads"); }, "num_key_value_heads 4, expected 2"},
           {[](json& j) { j["intermediate_size"] = 172; }, "intermediate_size 172, expected 160"},
           {[](json& j) { j["vocab_size"] = 96; }, "vocab_size 96, expected 97"},
           {[](json& j) { j["rope_theta"] = 1e6; }, "rope_theta 1000000.0, expected 10000.0"},
           {[](json& j) { j.erase("rms_norm_eps"); }, "rms_norm_eps 1e-06, expected 1e-05"},
           {[](json& j) { j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}}; }, "rope_scaling"},
           {[](json& j) { j.erase("hidden_size"); }, "config.json: no hidden_size"},
       }) {
    SCOPED_TRACE(c.message);
    write_bytes(config, written.dump());
    edit_json(config, c.edit);
    EXPECT_THAT([&] { checkpoint_weights(dir.str(), kSmoke); }, ThrowsMessage<std::runtime_error>(HasSubstr(c.message)));
  }
  // float32-rounded, as some converters write it.
  write_bytes(config, written.dump());
  edit_json(config, [](json& j) { j["rms_norm_eps"] = 9.999999747378752e-06; });
  EXPECT_NO_THROW(checkpoint_weights(dir.str(), kSmoke));
}

TEST(Checkpoint, WriteRefusesAnUnsupportedDtypeOrFileCount) {
  const TempDir dir;
  const auto source = random_weights(1);
  EXPECT_THAT([&] { write_checkpoint(dir.str(), kSmoke, *source, DType::fp32, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("dtype fp32")));
  EXPECT_THAT([&] { write_checkpoint(dir.str(), kSmoke, *source, DType::bf16, 0); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("files 0 (1 to 21")));
  EXPECT_NO_THROW(write_checkpoint(dir.str(), kSmoke, *source, DType::bf16, 21));  // one tensor per file
  EXPECT_NO_THROW(checkpoint_weights(dir.str(), kSmoke));
}

}  // namespace
}  // namespace hydragen::decode
