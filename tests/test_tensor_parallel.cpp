// Tensor parallelism's splits (issue 21), on host ranks: the smoke model decoded by 2 and 4 ranks,
// each holding its shard (query heads, KV heads or their replicas, FFN, LM head rows) and summing the
// row-parallel projections and reducing the argmax through the communicator, generates the tokens of
// one rank holding the whole model for 64 steps, in every mode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
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
