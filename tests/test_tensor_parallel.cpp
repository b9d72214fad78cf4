// Tensor parallelism's splits (issue 21), on host ranks: the smoke model decoded by 2 and 4 ranks,
// each holding its shard (query heads, KV heads or their replicas, FFN, LM head rows) and summing the
// row-parallel projections and reducing the argmax through the communicator, generates the tokens of
// one rank holding the whole model for 64 steps, in every mode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <random>
#include <stdexcept>
#include <vector>

#include "decode/communicator.hpp"
#include "decode/decoder.hpp"
#include "decode/host_runtime.hpp"
#include "decode_batch.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

struct Decoded {
  std::vector<int> tokens;    // [kGen, B]: the question step's argmax, then generate()'s
  std::vector<float> logits;  // the last step's, rank 0's rows [B, vocab rows of its shard]
};

// decode() of the test batch on `tp` host ranks; rank 0's view.
Decoded decode_on_ranks(const Batch& setup, int tp, Mode mode) {
  Decoded out;
  std::mutex done;
  run_host_ranks(tp, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    DecoderOptions o = setup.options(mode);
    o.rank = comm.rank();
    o.comm = &comm;
    Decoder d(*runtime, shard(setup.model, tp), *setup.weights, o);
    const std::vector<int> tokens = decode(setup, d);
    if (comm.rank() == 0) {
      const std::lock_guard<std::mutex> lock(done);
      out = {tokens, d.last_logits()};
    }
  });
  return out;
}

class TensorParallel : public ::testing::TestWithParam<Mode> {};

TEST_P(TensorParallel, TwoAndFourRanksGenerateTheTokensOfOne) {
  const Batch setup;
  const Decoded one = decode_on_ranks(setup, 1, GetParam());
  ASSERT_EQ(one.tokens.size(), static_cast<std::size_t>(kGen * kBatch));
  for (int tp : {2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const Decoded many = decode_on_ranks(setup, tp, GetParam());
    EXPECT_EQ(many.tokens, one.tokens);
    // Rank 0's LM head rows are the first of the whole model's: the same logits, summed in another order.
    const std::size_t rows = many.logits.size() / kBatch, all_rows = one.logits.size() / kBatch;
    for (std::size_t s = 0; s < kBatch; ++s) {
      for (std::size_t c = 0; c < rows; ++c) {
        EXPECT_NEAR(many.logits[s * rows + c], one.logits[s * all_rows + c], 1e-4) << "sequence " << s << ", token " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMode, TensorParallel,
                         ::testing::Values(Mode::hydragen, Mode::paged, Mode::flash, Mode::no_attention),
                         [](const ::testing::TestParamInfo<Mode>& p) {
                           return p.param == Mode::no_attention ? std::string("no_attention") : std::string(mode_name(p.param));
                         });

// The vocabulary-parallel argmax: each shard's best as a key, the largest key over shards, is the
// whole row's argmax, ties across a shard boundary (the lower token), NaN and -0 included.
TEST(ArgmaxKeys, TheLargestShardKeyIsTheWholeRowsArgmax) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  constexpr int kRows = 6, kVocab = 97, kShards = 4, kShardRows = 25;  // the last shard: 22 valid of 25
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> logits(kRows * kVocab);
  for (float& v : logits) v = normal(rng);
  logits[0 * kVocab + 24] = logits[0 * kVocab + 25] = 9;  // a tie across shards 0 and 1: token 24
  logits[1 * kVocab + 80] = logits[1 * kVocab + 3] = 9;   // a tie, the later shard first in rank order
  for (int c = 0; c < kVocab; ++c) logits[2 * kVocab + c] = -1;
  logits[2 * kVocab + 60] = -0.5f;                        // every value negative
  for (int c = 0; c < kVocab; ++c) logits[3 * kVocab + c] = c % 2 == 0 ? -0.0f : 0.0f;  // zeros of both signs: token 0
  logits[4 * kVocab + 0] = std::numeric_limits<float>::quiet_NaN();  // NaN never wins
  logits[4 * kVocab + 90] = 5;
  std::vector<int> whole(kRows);
  runtime->argmax(Matrix{logits.data(), DType::fp32, kRows, kVocab, kVocab}, kVocab, whole.data());
  std::vector<ArgmaxKey> best(kRows, kNoArgmax), keys(kRows);
  for (int r = 0; r < kShards; ++r) {
    const Matrix shard_logits{logits.data() + r * kShardRows, DType::fp32, kRows, kShardRows, kVocab};
    runtime->argmax_keys(shard_logits, std::min(kShardRows, kVocab - r * kShardRows), r * kShardRows, keys.data());
    for (int t = 0; t < kRows; ++t) best[t] = std::max(best[t], keys[t]);
  }
  std::vector<int> tokens(kRows);
  runtime->tokens_of(best.data(), kRows, tokens.data());
  EXPECT_EQ(tokens, whole);
  EXPECT_EQ(std::vector<int>(tokens.begin(), tokens.begin() + 5), (std::vector<int>{24, 3, 60, 0, 90}));
}

TEST(ArgmaxKeys, OrderLikeTheirLogitsThenTheLowerToken) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ascending = {-inf, -1e30f, -2, -1e-30f, 0, 1e-30f, 2, 1e30f, inf};
  for (std::size_t i = 1; i < ascending.size(); ++i) {
    EXPECT_LT(argmax_key(ascending[i - 1], 0), argmax_key(ascending[i], 5)) << ascending[i - 1] << " < " << ascending[i];
  }
  EXPECT_GT(argmax_key(1, 3), argmax_key(1, 4));  // equal logits: the lower token wins
  EXPECT_EQ(argmax_key(-0.0f, 7), argmax_key(0.0f, 7));
  EXPECT_EQ(argmax_key(std::numeric_limits<float>::quiet_NaN(), 7), argmax_key(-inf, 7));
  EXPECT_LT(kNoArgmax, argmax_key(-inf, 0x7FFFFFFF));
  EXPECT_EQ(argmax_token(argmax_key(-3, 123456)), 123456);
}

TEST(TensorParallelRanks, AllIsTrueOnlyWhenEveryRankSaysSo) {
  run_host_ranks(3, [](Communicator& comm) {
    EXPECT_TRUE(comm.all(true));
    EXPECT_FALSE(comm.all(comm.rank() != 2));
    EXPECT_FALSE(comm.all(false));
  });
}

TEST(TensorParallelRanks, AFailingRankStopsTheOthersWithItsError) {
  EXPECT_THAT([] {
    run_host_ranks(3, [](Communicator& comm) {
      if (comm.rank() == 1) throw std::invalid_argument("rank 1 failed");
      const std::unique_ptr<Runtime> runtime = host_runtime();
      std::vector<float> x(4, 1.0f);
      comm.all_reduce_sum(*runtime, Matrix{x.data(), DType::fp32, 2, 2, 2});  // would wait for rank 1 forever
    });
  }, ThrowsMessage<std::invalid_argument>(HasSubstr("rank 1 failed")));
}

TEST(TensorParallelRanks, TheCommunicatorMustMatchTheOptions) {
  run_host_ranks(2, [](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    DecoderOptions o;
    o.prompt_len = 4;
    o.suffix_capacity = 4;
    o.rank = 1 - comm.rank();
    o.comm = &comm;
    EXPECT_THAT([&] { Decoder(*runtime, shard(model_config("smoke"), 2), *random_weights(1), o); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("the communicator is rank")));
  });
}

}  // namespace
}  // namespace hydragen::decode
