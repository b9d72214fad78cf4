// Tensor parallelism over the GPUs of one host through NCCL (issue 21): the tiny model decoded by 2
// and 4 GPUs, each holding its shard and all-reducing the row-parallel projections (bf16) and the
// vocabulary-parallel argmax, generates the tokens one GPU holding the whole model generates, for 64
// steps (CUDA graph replays with the collectives inside), up to a bf16 near tie that the fp64 forward
// pass cannot tell apart, every token the fp64 forward pass's choice up to bf16 noise; rank 0's last
// logits match one GPU's for the sequences that kept its tokens. (The bf16 all-reduce rounds the
// partial sums: near ties fall otherwise than on one GPU more often than between the attention modes.)
// Skips with the reason without NCCL or without enough GPUs.
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

  // Sequence s's tokens before its answer: the prompt, then its question.
  std::vector<int> with_question(int s) const {
    std::vector<int> seq = prompt_;
    seq.insert(seq.end(), questions_.begin() + s * kQuestion, questions_.begin() + (s + 1) * kQuestion);
    return seq;
  }
  // `before`, then sequence s's generated tokens (tokens: [kGen, B]).
  static std::vector<int> generated(std::vector<int> before, const std::vector<int>& tokens, int s) {
    for (int j = 0; j < kGen; ++j) before.push_back(tokens[static_cast<std::size_t>(j * kBatch + s)]);
    return before;
  }
  // The first step where a's and b's tokens of sequence s differ, kGen if none.
  static int first_difference(const std::vector<int>& a, const std::vector<int>& b, int s) {
    int j = 0;
    while (j < kGen && a[static_cast<std::size_t>(j * kBatch + s)] == b[static_cast<std::size_t>(j * kBatch + s)]) ++j;
    return j;
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
  std::vector<bool> same(kBatch);  // a sequence whose tokens never differ: its last logits comparable
  for (int s = 0; s < kBatch && !attention; ++s) {  // no fp64 judge: the steps until the first difference, counted
    const int j = first_difference(one.tokens, many.tokens, s);
    same[s] = j == kGen;
    agreeing += same[s] ? 1 : 0;
    first_32 += j >= 32 ? 1 : 0;
  }
  for (int s = 0; s < kBatch && attention; ++s) {
    const std::vector<int> before = with_question(s);
    const Eigen::MatrixXd ref = reference.logits(generated(before, one.tokens, s)).middleRows(kPrompt + kQuestion - 1, kGen);
    same[s] = same_until_near_tie(ref, one.tokens, many.tokens, s, kBatch, "TP " + std::to_string(tp));
    agreeing += same[s] ? 1 : 0;
    first_32 += same_until_near_tie(ref.topRows(32), one.tokens, many.tokens, s, kBatch, "TP " + std::to_string(tp)) ? 1 : 0;
    // Past a near tie the sequences differ: TP's own tokens are the fp64 forward pass's choices up to bf16 noise.
    const Eigen::MatrixXd own = reference.logits(generated(before, many.tokens, s)).middleRows(kPrompt + kQuestion - 1, kGen);
    for (int j = 0; j < kGen; ++j) {
      const Eigen::RowVectorXd row = own.row(j);
      EXPECT_LE(row.maxCoeff() - row[many.tokens[static_cast<std::size_t>(j * kBatch + s)]], kNoise * row.cwiseAbs().maxCoeff())
          << "TP " << tp << ", sequence " << s << ", step " << j;
    }
  }
  // Rank 0's LM head rows are the first of the whole model's.
  const std::size_t rows = many.logits.size() / kBatch, all_rows = one.logits.size() / kBatch;
  double gap = 0, scale = 0;
  for (std::size_t s = 0; s < kBatch; ++s) {
    for (std::size_t c = 0; c < rows && same[s]; ++c) {
      gap = std::max(gap, static_cast<double>(std::abs(many.logits[s * rows + c] - one.logits[s * all_rows + c])));
      scale = std::max(scale, static_cast<double>(std::abs(one.logits[s * all_rows + c])));
    }
  }
  ASSERT_GT(agreeing, 0) << "no sequence kept one GPU's tokens for " << kGen << " steps";
  EXPECT_LT(gap, kNoise * scale);
  std::printf("[ tokens  ] TP %d, %s: %d of %d sequences the same tokens as one GPU for all %d steps, %d for the first 32; "
              "their last logits within %.4f of their scale\n",
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
