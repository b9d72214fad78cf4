// hydragen-decode's models: the presets are the published configurations, a shorter run keeps the
// shapes, and a tensor-parallel shard splits heads, FFN and LM head the Megatron way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "decode/model_config.hpp"

namespace hydragen::decode {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(ModelConfig, PresetsAreThePublishedConfigurations) {
  struct Row {
    const char* name;
    int layers, hidden, q_heads, kv_heads, ffn, vocab;
    double theta;
    int max_positions;
  };
  for (const Row& r : {Row{"codellama-7b", 32, 4096, 32, 32, 11008, 32016, 1e6, 16384},
                       Row{"codellama-13b", 40, 5120, 40, 40, 13824, 32016, 1e6, 16384},
                       Row{"codellama-34b", 48, 8192, 64, 8, 22016, 32000, 1e6, 16384},
                       Row{"yi-6b-200k", 32, 4096, 32, 4, 11008, 64000, 5e6, 200000}}) {
    SCOPED_TRACE(r.name);
    const ModelConfig m = model_config(r.name);
    EXPECT_EQ(m.layers, r.layers);
    EXPECT_EQ(m.hidden, r.hidden);
    EXPECT_EQ(m.q_heads, r.q_heads);
    EXPECT_EQ(m.kv_heads, r.kv_heads);
    EXPECT_EQ(m.head_dim, 128);
    EXPECT_EQ(m.q_heads * m.head_dim, m.hidden);
    EXPECT_EQ(m.ffn, r.ffn);
    EXPECT_EQ(m.vocab, r.vocab);
    EXPECT_EQ(m.rope_theta, r.theta);
    EXPECT_EQ(m.rms_eps, 1e-5);
    EXPECT_EQ(m.max_positions, r.max_positions);
    EXPECT_NO_THROW(m.validate());
  }
  EXPECT_NO_THROW(model_config("smoke").validate());
}

TEST(ModelConfig, CountsTheParametersOfLlama2) {
  // CodeLlama-7b and -13b are Llama 2 with 16 more vocabulary rows (embedding and LM head); Llama 2
  // 7B and 13B have 6,738,415,616 and 13,015,864,320 parameters.
  EXPECT_EQ(model_config("codellama-7b").parameters(), 6738415616LL + 2 * 16 * 4096);
  EXPECT_EQ(model_config("codellama-13b").parameters(), 13015864320LL + 2 * 16 * 5120);
}

TEST(ModelConfig, RefusesAnUnknownNameListingTheKnownOnes) {
  EXPECT_THAT([] { model_config("llama-70b"); },
              ThrowsMessage<std::invalid_argument>(
                  AllOf(HasSubstr("unknown model 'llama-70b'"), HasSubstr("codellama-13b"), HasSubstr("yi-6b-200k"))));
}

TEST(ModelConfig, RefusesFieldsNoModelCanHave) {
  ModelConfig m = model_config("smoke");
  m.kv_heads = 3;
  EXPECT_THAT([&] { m.validate(); }, ThrowsMessage<std::invalid_argument>(HasSubstr("not a multiple of kv_heads 3")));
  m = model_config("smoke");
  m.head_dim = 15;
  EXPECT_THAT([&] { m.validate(); }, ThrowsMessage<std::invalid_argument>(HasSubstr("head_dim must be even")));
  m = model_config("smoke");
  m.vocab = 0;
  EXPECT_THAT([&] { m.validate(); }, ThrowsMessage<std::invalid_argument>(HasSubstr("vocab must be positive")));
}

TEST(ModelConfig, WithLayersKeepsTheShapes) {
  const ModelConfig m = with_layers(model_config("codellama-13b"), 2);
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.hidden, 5120);
  EXPECT_THAT([] { with_layers(model_config("codellama-13b"), 41); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("has 40 layers")));
  EXPECT_THAT([] { with_layers(model_config("codellama-13b"), 0); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("1 to 40")));
}

TEST(ModelShard, SplitsHeadsFfnAndLmHeadTheWayThePapersRunsDid) {
  // Fig. 3 and the tables: CodeLlama-13b over 8 GPUs.
  const ModelShard s13 = shard(model_config("codellama-13b"), 8);
  EXPECT_EQ(s13.q_heads, 5);
  EXPECT_EQ(s13.kv_heads, 5);
  EXPECT_EQ(s13.ffn, 1728);
  EXPECT_EQ(s13.vocab_rows, 4008);  // 32016 / 8 = 4002, rounded up to a multiple of 8
  // CodeLlama-34b over 8: one KV head each.
  const ModelShard s34 = shard(model_config("codellama-34b"), 8);
  EXPECT_EQ(s34.q_heads, 8);
  EXPECT_EQ(s34.kv_heads, 1);
  // Fig. 5: Yi-6B-200k over 4 GPUs.
  const ModelShard yi = shard(model_config("yi-6b-200k"), 4);
  EXPECT_EQ(yi.q_heads, 8);
  EXPECT_EQ(yi.kv_heads, 1);
  EXPECT_EQ(yi.vocab_rows, 16000);
}

TEST(ModelShard, ReplicatesKvHeadsWhenThereAreFewerThanGpus) {
  // Yi's 4 KV heads over 8 GPUs: two GPUs hold each KV head, each with 4 of the 32 query heads.
  const ModelShard s = shard(model_config("yi-6b-200k"), 8);
  EXPECT_EQ(s.q_heads, 4);
  EXPECT_EQ(s.kv_heads, 1);
}

TEST(ModelShard, PadsTheLmHeadRowsToAMultipleOfTheGpusAndOf8PerGpu) {
  EXPECT_EQ(shard(model_config("smoke"), 2).vocab_rows, 56);  // 97 rows: 56 + 41, padded to 112
  EXPECT_EQ(shard(model_config("smoke"), 1).vocab_rows, 97);  // one GPU: the vocabulary as it is
  // 24 rows over 4 GPUs: 6 each, as 8 would leave the last GPU none.
  ModelConfig small = model_config("smoke");
  small.vocab = 24;
  EXPECT_EQ(shard(small, 4).vocab_rows, 6);
}

TEST(ModelShard, RefusesASplitThatIsNotExact) {
  EXPECT_THAT([] { shard(model_config("codellama-13b"), 3); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("40 query heads do not split evenly")));
  EXPECT_THAT([] { shard(model_config("smoke"), 0); }, ThrowsMessage<std::invalid_argument>(HasSubstr("at least 1")));
  ModelConfig m = model_config("smoke");  // 4 query heads, 2 KV heads
  m.q_heads = 12;
  m.kv_heads = 3;
  m.ffn = 48;
  EXPECT_THAT([&] { shard(m, 4); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("3 KV heads neither split nor replicate evenly")));
}

TEST(ModelShard, AllReducesTwoHiddenVectorsPerLayerAndToken) {
  EXPECT_EQ(shard(model_config("codellama-13b"), 8).allreduce_bytes_per_token(), 2LL * 40 * 5120 * 2);
  EXPECT_EQ(shard(model_config("codellama-13b"), 1).allreduce_bytes_per_token(), 0);
}

}  // namespace
}  // namespace hydragen::decode
