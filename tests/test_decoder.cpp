// hydragen-decode's decoder on the host (fp32, the CPU backends), the specification of issue 18's
// item 9: every mode generates the same greedy tokens for 64 steps, its logits match the fp64
// forward pass of the whole sequence, and the KV cache, positions, buckets and resets behave.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "decode/checkpoint.hpp"
#include "decode/decoder.hpp"
#include "decode/forward64.hpp"
#include "decode/host_runtime.hpp"
#include "decode/logit_check.hpp"
#include "decode/weight_cache.hpp"
#include "decode_batch.hpp"
#include "decode_counting_weights.hpp"
#include "decode_dropped_key.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Decoder, EveryModeGeneratesTheSameGreedyTokensFor64Steps) {
  const Batch setup;
  std::vector<int> want;
  for (Mode mode : {Mode::hydragen, Mode::paged, Mode::flash}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(mode));
    const std::vector<int> got = decode(setup, d);
    if (want.empty()) want = got;
    EXPECT_EQ(got, want);
  }
  // The sequences' questions differ, so a mix-up between sequences would show.
  EXPECT_NE(std::vector<int>(want.begin(), want.begin() + 1), std::vector<int>(want.begin() + 1, want.begin() + 2));
}

// fp32 against fp64 through two layers, under compare_logits's bound (logit_check.hpp). From the
// questions' step's tokens `generated` [B], six steps of one token (past a bucket boundary of 4): at
// each, every sequence's logits are the fp64 forward pass's of `sequence(s, generated, step)` (its
// whole token list) and the token it generated is that pass's argmax. Returns the tokens [7, B].
template <typename Sequence>
std::vector<int> expect_steps_match_the_fp64_forward_pass(Decoder& d, const Forward64& reference, const ModelConfig& model,
                                                          int batch, std::vector<int> generated, const Sequence& sequence) {
  const auto vocab = static_cast<std::ptrdiff_t>(model.vocab);
  for (int step = 0; step < 6; ++step) {
    const std::vector<float> logits = d.last_logits();
    for (int s = 0; s < batch; ++s) {
      const Eigen::RowVectorXd last = reference.logits(sequence(s, generated, step)).bottomRows(1);
      const Comparison c = compare_logits({logits.begin() + s * vocab, logits.begin() + (s + 1) * vocab}, last, DType::fp32, model);
      EXPECT_TRUE(c.pass) << "sequence " << s << ", step " << step << ": " << c.o_bound_ratio << " of the bound";
      int argmax = 0;
      last.maxCoeff(&argmax);
      EXPECT_EQ(generated[static_cast<std::size_t>(step * batch + s)], argmax) << "sequence " << s << ", step " << step;
    }
    const std::vector<int> next(generated.end() - batch, generated.end());
    const std::vector<int> more = d.step(next, 1);
    generated.insert(generated.end(), more.begin(), more.end());
  }
  return generated;
}

void expect_logits_match_the_fp64_forward_pass(const Batch& setup) {
  const Forward64 reference(setup.model, *setup.weights);
  for (Mode mode : {Mode::hydragen, Mode::paged, Mode::flash}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(mode, 4));
    d.prefill(setup.prompt);
    expect_steps_match_the_fp64_forward_pass(d, reference, setup.model, kBatch, d.step(setup.questions, kQuestion),
                                             [&](int s, const std::vector<int>& g, int step) { return setup.sequence(s, g, step); });
  }
}

TEST(Decoder, LogitsMatchTheFp64ForwardPassOfTheWholeSequenceAtEveryStep) { expect_logits_match_the_fp64_forward_pass(Batch()); }

// The check above sees one token: after the questions' step, each mode's logits of sequence 1 fail it
// against the fp64 pass that leaves any one of its 23 earlier keys out of its last token's attention.
TEST(Decoder, TheLogitsCheckFailsWithoutAnyOneKey) {
  const Batch setup;
  const Forward64 reference(setup.model, *setup.weights);
  for (Mode mode : {Mode::hydragen, Mode::paged, Mode::flash}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(mode));
    d.prefill(setup.prompt);
    d.step(setup.questions, kQuestion);
    const std::vector<float> logits = d.last_logits();
    const auto vocab = static_cast<std::ptrdiff_t>(setup.model.vocab);
    expect_check_sees_each_dropped_key({logits.begin() + vocab, logits.begin() + 2 * vocab}, reference, setup.sequence(1, {}, 0),
                                       DType::fp32, setup.model);
  }
}

// Item 10: a Hugging Face checkpoint (written here: nothing can be downloaded), loaded as the
// decoder and the fp64 forward pass read it, two files, fp16.
TEST(Decoder, ACheckpointsWeightsDecodeAsTheFp64ForwardPassOfTheSameWeights) {
  Batch setup;
  const std::string dir = (std::filesystem::temp_directory_path() / "hydragen_test_decoder_checkpoint").string();
  write_checkpoint(dir, setup.model, *setup.weights, DType::fp16, 2);
  setup.weights = checkpoint_weights(dir, setup.model);
  EXPECT_THAT(setup.weights->describe(), HasSubstr("fp16, 2 files"));
  expect_logits_match_the_fp64_forward_pass(setup);
  std::filesystem::remove_all(dir);
}

TEST(Decoder, ResetReturnsToThePrefillAndTheSameTokensFollow) {
  const Batch setup;
  Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::hydragen, 8));
  const std::vector<int> first = decode(setup, d);
  d.reset();
  EXPECT_EQ(d.suffix_length(), 0);
  const std::vector<int> again_first = d.step(setup.questions, kQuestion);
  std::vector<int> again = again_first;
  const std::vector<int> rest = d.generate(again_first, kGen - 1);
  again.insert(again.end(), rest.begin(), rest.end());
  EXPECT_EQ(again, first);
}

TEST(Decoder, PlansOncePerBucketNotPerToken) {
  const Batch setup;
  Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::hydragen, 16));
  d.prefill(setup.prompt);  // the prefill's plan
  const std::vector<int> first = d.step(setup.questions, kQuestion);  // the question's: q_len 4
  d.generate(first, kGen - 1);  // suffixes 5 .. 67: buckets of 16, 32, 48, 64, 68
  EXPECT_EQ(d.plans_made(), 1 + 1 + 5);
}

// The timed runs' setting: every bucket made ahead, so the decode loop only replays graphs; and the
// same tokens as buckets made on the way.
TEST(Decoder, PreparedBucketsServeTheRunWithoutPlanningAndGiveTheSameTokens) {
  const Batch setup;
  Decoder lazy(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::hydragen, 16));
  const std::vector<int> want = decode(setup, lazy);
  Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::hydragen, 16));
  d.prefill(setup.prompt);
  d.prepare(kQuestion, kQuestion, kQuestion);
  d.prepare(1, kQuestion + 1, kQuestion + kGen - 1);
  const int plans = d.plans_made();
  EXPECT_EQ(plans, 1 + 1 + 5);
  for (int run = 0; run < 2; ++run) {  // reset() keeps the buckets
    d.reset();
    std::vector<int> got = d.step(setup.questions, kQuestion);
    const std::vector<int> rest = d.generate(got, kGen - 1);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, want);
    EXPECT_EQ(d.plans_made(), plans);
  }
  EXPECT_THAT([&] { d.prepare(1, 0, 3); }, ThrowsMessage<std::invalid_argument>(HasSubstr("q_len <= first")));
}

// What hydragen-decode's attention_ms times: the steps' attention alone on the buckets generate()
// replays, which appends scratch to the leaves only: after reset() the same tokens follow.
TEST(Decoder, AttentionAloneRunsTheStepsOnTheirBucketsAndLeavesThePromptAsItWas) {
  const Batch setup;
  Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::hydragen, 16));
  const std::vector<int> want = decode(setup, d);
  const int plans = d.plans_made();
  d.reset();
  d.step(setup.questions, kQuestion);
  d.attend_alone(kGen - 1);
  EXPECT_EQ(d.suffix_length(), kQuestion + kGen - 1);
  EXPECT_EQ(d.plans_made(), plans) << "the steps' own buckets";
  EXPECT_THAT([&] { d.attend_alone(2); }, ThrowsMessage<std::invalid_argument>(HasSubstr("exceed the capacity")));
  d.reset();
  std::vector<int> got = d.step(setup.questions, kQuestion);
  const std::vector<int> rest = d.generate(got, kGen - 1);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, want);
  Decoder none(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::no_attention));
  none.prefill(setup.prompt);
  EXPECT_THAT([&] { none.attend_alone(1); }, ThrowsMessage<std::invalid_argument>(HasSubstr("no attention")));
}

TEST(Decoder, NoAttentionRunsTheProjectionsAlone) {
  const Batch setup;
  Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, setup.options(Mode::no_attention));
  EXPECT_EQ(d.backend(), nullptr);
  const std::vector<int> tokens = decode(setup, d);
  EXPECT_EQ(tokens.size(), static_cast<std::size_t>(kGen * kBatch));
  EXPECT_EQ(d.plans_made(), 0);
}

// Sharing below the prompt (the paper's Fig. 6): groups of ragged length after the prompt, shared (a
// tree of three levels) or copied into each leaf (the prompt alone shared). Every sequence's logits at
// every step are the fp64 forward pass of its whole token list: prompt, its group's tokens, its
// question, what it generated. seq_group empty: equal runs of consecutive sequences.
void expect_groups_decode_as_the_whole_sequence(const std::vector<int>& group_lens, const std::vector<int>& seq_group, int batch) {
  const Batch setup;
  const Forward64 reference(setup.model, *setup.weights);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> token(0, setup.model.vocab - 1);
  std::vector<std::vector<int>> groups(group_lens.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (int i = 0; i < group_lens[g]; ++i) groups[g].push_back(token(rng));
  }
  std::vector<int> questions;
  for (int i = 0; i < batch * kQuestion; ++i) questions.push_back(token(rng));
  auto group_of = [&](int s) { return seq_group.empty() ? s / (batch / static_cast<int>(group_lens.size())) : seq_group[static_cast<std::size_t>(s)]; };
  auto sequence = [&](int s, const std::vector<int>& generated, int steps) {
    std::vector<int> t = setup.prompt;
    if (group_of(s) >= 0) t.insert(t.end(), groups[static_cast<std::size_t>(group_of(s))].begin(), groups[static_cast<std::size_t>(group_of(s))].end());
    t.insert(t.end(), questions.begin() + s * kQuestion, questions.begin() + (s + 1) * kQuestion);
    for (int i = 0; i < steps; ++i) t.push_back(generated[static_cast<std::size_t>(i * batch + s)]);
    return t;
  };
  for (const auto& [mode, copied] : std::vector<std::pair<Mode, bool>>{{Mode::hydragen, false}, {Mode::paged, false}, {Mode::hydragen, true}}) {
    SCOPED_TRACE(std::string(mode_name(mode)) + (copied ? ", groups copied" : ", groups shared"));
    DecoderOptions o = setup.options(mode, 4);
    o.batch = batch;
    o.group_lens = group_lens;
    o.seq_group = seq_group;
    o.copy_groups = copied;
    Decoder d(*setup.runtime, shard(setup.model, 1), *setup.weights, o);
    EXPECT_EQ(d.attention_tree(8).depth(), copied ? 2 : 3);
    d.prefill(setup.prompt);
    const std::vector<int> after_groups = d.prefill_groups(groups);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      std::vector<int> t = setup.prompt;
      t.insert(t.end(), groups[g].begin(), groups[g].end());
      const Eigen::RowVectorXd last = reference.logits(t).bottomRows(1);
      int argmax = 0;
      last.maxCoeff(&argmax);
      EXPECT_EQ(after_groups[g], argmax) << "group " << g;
    }
    const std::vector<int> generated =
        expect_steps_match_the_fp64_forward_pass(d, reference, setup.model, batch, d.step(questions, kQuestion), sequence);
    // The same tokens again through generate()'s captured steps after a reset.
    d.reset();
    const std::vector<int> first = d.step(questions, kQuestion);
    const std::vector<int> rest = d.generate(first, 6);
    EXPECT_EQ(rest, std::vector<int>(generated.begin() + batch, generated.end()));
  }
}

TEST(Decoder, GroupsBelowThePromptDecodeAsTheWholeSequence) { expect_groups_decode_as_the_whole_sequence({3, 7}, {}, 4); }

TEST(Decoder, GroupsOfAnySizeAndMembershipDecodeAsTheWholeSequence) {
  // Group 1 holds three sequences, group 0 one, sequence 2 none (the prompt, then its own tokens).
  expect_groups_decode_as_the_whole_sequence({3, 7}, {1, 0, -1, 1, 1}, 5);
}

TEST(Decoder, GroupsAreRefusedWhereTheyCannotApply) {
  const Batch setup;
  const ModelShard sh = shard(setup.model, 1);
  DecoderOptions o = setup.options(Mode::flash);
  auto expect_refused = [&](const char* why) {
    SCOPED_TRACE(why);
    EXPECT_THAT([&] { Decoder(*setup.runtime, sh, *setup.weights, o); }, ThrowsMessage<std::invalid_argument>(HasSubstr(why)));
  };
  o.group_lens = {2, 2, 2};
  expect_refused("not for mode flash");
  o.mode = Mode::hydragen;
  o.batch = 4;
  expect_refused("3 groups need a batch that is a multiple of them, got 4");
  o.group_lens = {2, 0};
  expect_refused("at least one token");
  o.group_lens = {};
  o.copy_groups = true;
  expect_refused("give group_lens");
  o.copy_groups = false;
  o.group_lens = {2, 3};
  o.seq_group = {0, 1, 2, 0};
  expect_refused("seq_group names group 2 of 2");
  o.seq_group = {0, 1};
  expect_refused("seq_group has 2 entries for a batch of 4");
  o.seq_group = {};
  Decoder d(*setup.runtime, sh, *setup.weights, o);
  d.prefill(setup.prompt);
  EXPECT_THAT([&] { d.step(std::vector<int>(4 * kQuestion, 1), kQuestion); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("prefill the groups")));
  EXPECT_THAT([&] { d.prefill_groups({{1, 2}}); }, ThrowsMessage<std::invalid_argument>(HasSubstr("1 groups of tokens for a decoder made for 2")));
  EXPECT_THAT([&] { d.prefill_groups({{1, 2}, {1, 2}}); }, ThrowsMessage<std::invalid_argument>(HasSubstr("group 1 has 2 tokens")));
}

// Decoders on one upload of the shard's weights (hydragen-decode's points of one shard): each tensor
// loaded once, and every decoder's tokens and logits those of a decoder that uploaded its own.
TEST(Decoder, DecodersOnOneUploadDecodeAsDecodersWithTheirOwn) {
  const Batch setup;
  const ModelShard sh = shard(setup.model, 1);
  const CountingWeights counting(5);  // setup.weights' values
  WeightCache cache(*setup.runtime);
  for (Mode mode : {Mode::hydragen, Mode::flash}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Decoder own(*setup.runtime, sh, *setup.weights, setup.options(mode));
    Decoder shared(*setup.runtime, sh, cache.get(sh, counting, 0), setup.options(mode));
    EXPECT_EQ(decode(setup, shared), decode(setup, own));
    EXPECT_EQ(shared.last_logits(), own.last_logits());
  }
  EXPECT_EQ(cache.builds(), 1);
  EXPECT_EQ(counting.loads(), static_cast<int>(tensor_specs(setup.model).size()));
}

TEST(Decoder, WeightsOfAnotherShardOrRuntimeAreRefusedNamingBoth) {
  const Batch setup;
  const ModelShard one = shard(setup.model, 1), two = shard(setup.model, 2);
  const auto weights = std::make_shared<const ShardWeights>(*setup.runtime, one, *setup.weights, 0);
  const DecoderOptions o = setup.options(Mode::hydragen);
  auto expect_refused = [&](Runtime& runtime, const ModelShard& sh, std::shared_ptr<const ShardWeights> w, const std::string& why) {
    SCOPED_TRACE(why);
    EXPECT_THAT([&] { Decoder(runtime, sh, w, o); }, ThrowsMessage<std::invalid_argument>(HasSubstr(why)));
  };
  expect_refused(*setup.runtime, two, weights,
                 "weights of smoke (layers 2, rank 0 of tp 1) on host fp32 given to a decoder of smoke (layers 2, rank 0 of tp 2) "
                 "on host fp32");
  expect_refused(*setup.runtime, shard(with_layers(setup.model, 1), 1), weights, "given to a decoder of smoke (layers 1, rank 0 of tp 1)");
  expect_refused(*setup.runtime, two, std::make_shared<const ShardWeights>(*setup.runtime, two, *setup.weights, 1),
                 "weights of smoke (layers 2, rank 1 of tp 2) on host fp32 given to a decoder of smoke (layers 2, rank 0 of tp 2)");
  const std::unique_ptr<Runtime> other = host_runtime();
  expect_refused(*other, one, weights, "on host fp32 (another runtime) given to");
  expect_refused(*setup.runtime, one, nullptr, "given no weights");
  EXPECT_THAT([&] { ShardWeights(*setup.runtime, one, *setup.weights, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("weights for rank 1: a 1-way shard has ranks 0 to 0")));
}

TEST(Decoder, BadUseIsRefusedWithTheReason) {
  const Batch setup;
  const ModelShard sh = shard(setup.model, 1);
  DecoderOptions o = setup.options(Mode::hydragen);
  o.prompt_len = 5000;
  EXPECT_THAT([&] { Decoder(*setup.runtime, sh, *setup.weights, o); }, ThrowsMessage<std::invalid_argument>(HasSubstr("positions")));
  o = setup.options(Mode::hydragen);
  o.backend = "reference";  // fp64 only: the host runtime is fp32
  EXPECT_THAT([&] { Decoder(*setup.runtime, sh, *setup.weights, o); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("cannot run mode hydragen")));
  Decoder d(*setup.runtime, sh, *setup.weights, setup.options(Mode::paged));
  EXPECT_THAT([&] { d.step(setup.questions, kQuestion); }, ThrowsMessage<std::invalid_argument>(HasSubstr("prefill")));
  EXPECT_THAT([&] { d.prefill({1, 2, 3}); }, ThrowsMessage<std::invalid_argument>(HasSubstr("the prompt has 3 tokens")));
  std::vector<int> bad = setup.prompt;
  bad[7] = setup.model.vocab;
  EXPECT_THAT([&] { d.prefill(bad); }, ThrowsMessage<std::invalid_argument>(HasSubstr("at index 7")));
  d.prefill(setup.prompt);
  EXPECT_THAT([&] { d.generate(std::vector<int>(kBatch, 0), kQuestion + kGen + 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("exceed the capacity")));
}

}  // namespace
}  // namespace hydragen::decode
