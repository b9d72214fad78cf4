// Tensor parallelism over the GPUs of one host through NCCL (issue 21): the tiny model decoded by 2
// and 4 GPUs, each holding its shard and all-reducing the row-parallel projections (bf16) and the
// vocabulary-parallel argmax, generates the tokens one GPU holding the whole model generates, for 64
// steps (CUDA graph replays with the collectives inside), up to a bf16 near tie that the fp64 forward
// pass cannot tell apart; rank 0's logits match one GPU's. Skips with the reason without NCCL or
// without enough GPUs.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "decode/cuda_runtime.hpp"
#include "decode/decoder.hpp"
#include "decode/forward64.hpp"
#include "../decode_options.hpp"
#include "device_fixture.hpp"
#include "hydragen/cuda/device.hpp"
#include "tiny_model.hpp"
#ifdef HYDRAGEN_WITH_NCCL
#include "decode/nccl_ranks.hpp"
#endif

namespace hydragen::decode {
namespace {

constexpr int kBatch = 8, kPrompt = 300, kQuestion = 5, kGen = 64;

struct Decoded {
  std::vector<int> tokens;    // [kGen, B]: the question step's argmax, then generate()'s
  std::vector<float> logits;  // the last step's, rank 0's rows [B, vocab rows of its shard]
};

class TensorParallelOnGpus : public DeviceTest, public ::testing::WithParamInterface<std::tuple<int, Mode>> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
#ifndef HYDRAGEN_WITH_NCCL
    GTEST_SKIP() << "this build has no NCCL";
#endif
    const int tp = std::get<0>(GetParam()), gpus = cuda::device_count();
    if (gpus < tp) GTEST_SKIP() << "TP " << tp << " needs " << tp << " GPUs, " << gpus << " here";
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> token(0, model_.vocab - 1);
    for (int i = 0; i < kPrompt; ++i) prompt_.push_back(token(rng));
    for (int i = 0; i < kBatch * kQuestion; ++i) questions_.push_back(token(rng));
  }

  // The prompt, the questions' step, then generate(): on one rank's runtime and shard.
  Decoded decode(Runtime& runtime, int tp, Communicator* comm) const {
    DecoderOptions o = question_options(std::get<1>(GetParam()), kBatch, kPrompt, kQuestion, kGen);
    if (comm != nullptr) {
      o.rank = comm->rank();
      o.comm = comm;
    }
    const std::unique_ptr<WeightSource> weights = random_weights(9);  // each rank its own: the same values
    Decoder d(runtime, shard(model_, tp), *weights, o);
    d.prefill(prompt_);
    Decoded out{d.step(questions_, kQuestion), {}};
    const std::vector<int> rest = d.generate(out.tokens, kGen - 1);  // graphs with the all-reduces captured
    out.tokens.insert(out.tokens.end(), rest.begin(), rest.end());
    out.logits = d.last_logits();
    return out;
  }

  ModelConfig model_ = tiny_model();
  std::vector<int> prompt_, questions_;
};

TEST_P(TensorParallelOnGpus, GeneratesOneGpusTokensUpToBf16NearTies) {
#ifdef HYDRAGEN_WITH_NCCL
  const int tp = std::get<0>(GetParam());
  const std::unique_ptr<Runtime> runtime = cuda_runtime();
  const Decoded one = decode(*runtime, 1, nullptr);
  Decoded many;
  std::mutex done;
  run_nccl_ranks(tp, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> rank_runtime = cuda_runtime();  // on the rank's GPU
    Decoded mine = decode(*rank_runtime, tp, &comm);
    if (comm.rank() == 0) {
      const std::lock_guard<std::mutex> lock(done);
      many = std::move(mine);
    }
  });
  ASSERT_EQ(many.tokens.size(), one.tokens.size());
  const Forward64 reference(model_, *random_weights(9));
  const bool attention = std::get<1>(GetParam()) != Mode::no_attention;  // the fp64 forward pass attends
  int agreeing = 0, first_32 = 0;
  for (int s = 0; s < kBatch && !attention; ++s) {  // no fp64 judge: the steps until the first difference, counted
    int j = 0;
    while (j < kGen && one.tokens[static_cast<std::size_t>(j * kBatch + s)] == many.tokens[static_cast<std::size_t>(j * kBatch + s)]) ++j;
    agreeing += j == kGen ? 1 : 0;
    first_32 += j >= 32 ? 1 : 0;
  }
  for (int s = 0; s < kBatch && attention; ++s) {
    std::vector<int> seq = prompt_;
    seq.insert(seq.end(), questions_.begin() + s * kQuestion, questions_.begin() + (s + 1) * kQuestion);
    for (int j = 0; j < kGen; ++j) seq.push_back(one.tokens[static_cast<std::size_t>(j * kBatch + s)]);
    const Eigen::MatrixXd ref = reference.logits(seq).middleRows(kPrompt + kQuestion - 1, kGen);
    agreeing += same_until_near_tie(ref, one.tokens, many.tokens, s, kBatch, "TP " + std::to_string(tp)) ? 1 : 0;
    first_32 += same_until_near_tie(ref.topRows(32), one.tokens, many.tokens, s, kBatch, "TP " + std::to_string(tp)) ? 1 : 0;
  }
  // Rank 0's LM head rows are the first of the whole model's.
  const std::size_t rows = many.logits.size() / kBatch, all_rows = one.logits.size() / kBatch;
  double gap = 0, scale = 0;
  for (std::size_t s = 0; s < kBatch; ++s) {
    for (std::size_t c = 0; c < rows; ++c) {
      gap = std::max(gap, static_cast<double>(std::abs(many.logits[s * rows + c] - one.logits[s * all_rows + c])));
      scale = std::max(scale, static_cast<double>(std::abs(one.logits[s * all_rows + c])));
    }
  }
  EXPECT_LT(gap, kNoise * scale);
  std::printf("[ tokens  ] TP %d, %s: %d of %d sequences the same tokens as one GPU for all %d steps, %d for the first 32; "
              "last logits within %.4f of their scale\n",
              tp, std::string(mode_name(std::get<1>(GetParam()))).c_str(), agreeing, kBatch, kGen, first_32, gap / scale);
#endif
}

INSTANTIATE_TEST_SUITE_P(TwoAndFourGpus, TensorParallelOnGpus,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values(Mode::hydragen, Mode::paged, Mode::flash, Mode::no_attention)),
                         [](const ::testing::TestParamInfo<std::tuple<int, Mode>>& p) {
                           const Mode mode = std::get<1>(p.param);
                           return "tp" + std::to_string(std::get<0>(p.param)) + "_" +
                                  (mode == Mode::no_attention ? std::string("no_attention") : std::string(mode_name(mode)));
                         });

}  // namespace
}  // namespace hydragen::decode
