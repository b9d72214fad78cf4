// hydragen-decode on a user's prompts (issue 18, item 10): token ids in, token ids out. Prompts of
// different lengths share their longest common prefix; each generates what the fp64 forward pass
// generates greedily after it, in every mode, with random weights and with a checkpoint's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "decode/checkpoint.hpp"
#include "decode/forward64.hpp"
#include "decode/host_runtime.hpp"
#include "decode/prompts.hpp"
#include "hydragen/cost_model.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// The file format is read_token_lists' (test_detect.cpp); the model's vocabulary is the limit.
TEST(ReadPrompts, RefusesAnIdOutsideTheVocabularyNamingTheLine) {
  const std::string big = write_file("hydragen_prompts_big.txt", "1 2\n1 10\n");
  EXPECT_EQ(read_prompts(big, 11), (std::vector<std::vector<int>>{{1, 2}, {1, 10}}));
  EXPECT_THAT([&] { read_prompts(big, 10); }, ThrowsMessage<std::invalid_argument>(HasSubstr(":2: '10' is not a token id in [0, 10)")));
  std::filesystem::remove(big);
}

TEST(CommonPrefix, IsWhatEveryPromptStartsWith) {
  EXPECT_EQ(common_prefix({{1, 2, 3, 4}, {1, 2, 5}, {1, 2, 3}}), (std::vector<int>{1, 2}));
  EXPECT_EQ(common_prefix({{4, 5}}), (std::vector<int>{4, 5}));
  EXPECT_TRUE(common_prefix({{1, 2}, {3}}).empty());
}

// Prompts sharing 12 tokens, then rests of 0, 3 and 7 tokens.
std::vector<std::vector<int>> ragged_prompts() {
  std::vector<int> shared;
  for (int i = 0; i < 12; ++i) shared.push_back((i * 37 + 5) % 97);
  std::vector<std::vector<int>> prompts(3, shared);
  prompts[1].insert(prompts[1].end(), {3, 60, 11});
  prompts[2].insert(prompts[2].end(), {90, 1, 2, 44, 45, 46, 0});
  return prompts;
}

// Every mode's `steps` greedy tokens after each prompt equal the fp64 forward pass's.
void expect_fp64_greedy_answers(const WeightSource& weights, const std::vector<std::vector<int>>& prompts, int steps) {
  const ModelConfig model = model_config("smoke");
  const Forward64 reference(model, weights);
  const std::unique_ptr<Runtime> runtime = host_runtime();
  for (Mode mode : {Mode::hydragen, Mode::paged, Mode::flash}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    DecoderOptions options;
    options.mode = mode;
    options.bucket = 4;  // several plans over the run
    const auto answers = answer_prompts(*runtime, shard(model, 1), weights, options, prompts, steps);
    ASSERT_EQ(answers.size(), prompts.size());
    for (std::size_t s = 0; s < prompts.size(); ++s) EXPECT_EQ(answers[s], reference.greedy(prompts[s], steps)) << "sequence " << s;
  }
}

TEST(AnswerPrompts, EachPromptGetsTheFp64GreedyAnswerInEveryMode) { expect_fp64_greedy_answers(*random_weights(21), ragged_prompts(), 20); }

TEST(AnswerPrompts, ACheckpointsModelAnswersAsTheFp64ForwardPassOfItsWeights) {
  const std::string dir = (std::filesystem::temp_directory_path() / "hydragen_test_prompts_checkpoint").string();
  write_checkpoint(dir, model_config("smoke"), *random_weights(22), DType::bf16, 1);
  expect_fp64_greedy_answers(*checkpoint_weights(dir, model_config("smoke")), ragged_prompts(), 20);
  std::filesystem::remove_all(dir);
}

// Two levels of sharing (issue 19): 40 tokens shared by all six prompts, 30 more by prompts 0 and 3,
// 30 others by 1, 4 and 5, then own rests of 0 to 5 tokens; prompt 2 has no group. And a third level
// (prompts 1 and 4 share 25 more) that the decoder leaves in their rests.
std::vector<std::vector<int>> grouped_prompts() {
  auto run = [](int first, int count) {
    std::vector<int> t;
    for (int i = 0; i < count; ++i) t.push_back((first + i * 37) % 97);
    return t;
  };
  const std::vector<int> all = run(5, 40), a = run(11, 30), b = run(23, 30), deeper = run(41, 25);
  auto joined = [](std::vector<std::vector<int>> parts) {
    std::vector<int> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  return {joined({all, a}), joined({all, b, deeper, {1, 2}}), joined({all, {7, 8, 9}}), joined({all, a, {3}}),
          joined({all, b, deeper, {4, 5, 6, 0, 3}}), joined({all, b, {9}})};
}

TEST(SharePrompts, TheRootIsThePromptAndTheFirstSharedSegmentBelowItAGroup) {
  const auto prompts = grouped_prompts();
  const AttentionShape decode = make_shape(6, 1, 4, 2, 16, DType::fp32);
  const SharingRates host{};  // the host runtime's: no measured rate
  ASSERT_LE(min_shared_tokens(decode, 2, host), 25) << "the fixture's runs must be worth sharing";
  const PromptSharing sharing = share_prompts(prompts, decode, host, true);
  EXPECT_EQ(sharing.prompt, std::vector<int>(prompts[0].begin(), prompts[0].begin() + 40));
  ASSERT_EQ(sharing.groups.size(), 2u);
  EXPECT_EQ(sharing.groups[0], std::vector<int>(prompts[0].begin() + 40, prompts[0].end()));
  EXPECT_EQ(sharing.groups[1], std::vector<int>(prompts[1].begin() + 40, prompts[1].begin() + 70));
  EXPECT_EQ(sharing.seq_group, (std::vector<int>{0, 1, -1, 0, 1, 1}));
  EXPECT_TRUE(sharing.rests[0].empty());
  EXPECT_EQ(sharing.rests[1].size(), 27u) << "the third level stays in the rest";
  EXPECT_EQ(sharing.rests[2], (std::vector<int>{7, 8, 9}));
  const PromptSharing flash = share_prompts(prompts, decode, host, false);
  EXPECT_TRUE(flash.groups.empty());
  EXPECT_EQ(flash.rests[0].size(), 30u);
  const PromptSharing on_host = share_prompts(prompts, shard(model_config("smoke"), 1), *host_runtime(), Mode::hydragen);
  EXPECT_EQ(on_host.rates.source, "no measured rate") << "the host runtime's memory: no device measured";
  EXPECT_EQ(on_host.groups, sharing.groups);
}

TEST(AnswerPrompts, GroupedPromptsGetTheFp64GreedyAnswerInEveryMode) {
  expect_fp64_greedy_answers(*random_weights(23), grouped_prompts(), 12);
}

TEST(AnswerPrompts, PromptsThatShareNothingAreRefused) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  const ModelConfig model = model_config("smoke");
  EXPECT_THAT([&] { answer_prompts(*runtime, shard(model, 1), *random_weights(1), {}, {{1, 2}, {3, 4}}, 4); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("share no first token")));
}

}  // namespace
}  // namespace hydragen::decode
