// What every CUDA plan promises beyond the numbers (the harness in tests/test_backends.cpp checks
// those): run() can be captured in a CUDA graph and replayed on any stream with the same result,
// host pointers are refused with a clear message, and a plan that does not fit says how many bytes
// it asked for. GPU only: without one every test skips with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cctype>
#include <string>
#include <vector>

#include "device_fixture.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;

class CudaPlan : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

void replay_equals_eager_run(const BackendChoice& choice, const Problem& problem) {
  const AttentionBackend& b = backend(choice.backend);
  const StagedProblem staged(b.memory(), problem, Storage::shared);
  const auto plan = b.plan(staged.shape(), staged.tree(), choice.options);
  staged.poison_outputs();
  plan->run(staged.inputs(), staged.outputs());
  const Results eager = staged.fetch();

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  plan->run(staged.inputs(), staged.outputs(), Stream{stream});
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  staged.poison_outputs();
  for (int replay = 0; replay < 2; ++replay) ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const Results replayed = staged.fetch();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);

  ASSERT_EQ(replayed.o.size(), eager.o.size());
  for (std::size_t i = 0; i < eager.o.size(); ++i) ASSERT_EQ(replayed.o[i], eager.o[i]) << "O element " << i;
  for (std::size_t i = 0; i < eager.lse.size(); ++i) ASSERT_EQ(replayed.lse[i], eager.lse[i]) << "LSE element " << i;
}

// A causal GQA problem over a two-level tree: splits and the merge run; cuda-hydragen:form=wide runs
// wide and narrow items on two streams, which a graph captures as a fork and a join (cuda-hydragen
// runs this small problem in one launch of narrow blocks), and cuda-hydragen-cublas its cuBLAS
// products beside the leaves. And a shared prefix alone: one launch whose split parts the merge
// combines, which may start early (dependent_launch.cuh), or the cuBLAS chunks alone.
std::vector<Problem> small_problems() {
  return {make_problem(make_shape(6, 2, 8, 2, 64, DType::bf16),
                       SharingTree::two_level(700, {40, 0}, {{3, 1, 90}, {5, 2, 1}}), 77),
          make_problem(make_shape(6, 1, 8, 2, 64, DType::bf16), SharingTree::prefix_suffix(700, std::vector<int>(6, 0)), 78)};
}

TEST_P(CudaPlan, GraphReplayOnAnotherStreamEqualsAnEagerRunBitForBit) {
  for (const Problem& problem : small_problems()) {
    SCOPED_TRACE(problem.shape.describe() + " over " + problem.tree.describe());
    replay_equals_eager_run(parse_backend_choice(GetParam()), problem);
  }
}

TEST_P(CudaPlan, RefusesHostPointersNamingTheTensor) {
  const AttentionBackend& b = backend(parse_backend_choice(GetParam()).backend);
  const Problem problem = small_problems().front();
  const StagedProblem on_host(host_memory(), problem, Storage::shared);
  const auto plan = b.plan(on_host.shape(), on_host.tree());
  EXPECT_THAT([&] { plan->run(on_host.inputs(), on_host.outputs()); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("inputs.q: not CUDA device memory")));
}

TEST_P(CudaPlan, PlanThatDoesNotFitStatesTheBytesRequested) {
  if (GetParam() != "cuda-naive") GTEST_SKIP() << "only cuda-naive's workspace grows with B x path";
  const AttentionBackend& b = backend(parse_backend_choice(GetParam()).backend);
  // 2^16 sequences of 2^24 tokens with 64 query heads: the naive scores workspace is 2^48 bytes.
  const AttentionShape shape = make_shape(1 << 16, 1, 64, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(1 << 24, std::vector<int>(1 << 16, 0));
  EXPECT_THAT([&] { b.plan(shape, tree); }, ::testing::ThrowsMessage<OutOfMemory>(HasSubstr("bytes")));
  // The failed allocation left the context usable.
  void* probe = nullptr;
  EXPECT_EQ(cudaMalloc(&probe, 1024), cudaSuccess);
  cudaFree(probe);
}

INSTANTIATE_TEST_SUITE_P(AllCudaBackends, CudaPlan,
                         ::testing::Values("cuda-naive", "cuda-flash", "cuda-hydragen", "cuda-hydragen:form=wide",
                                           "cuda-hydragen-cublas"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace hydragen
