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
// combines, which may start early (dependent_launch.cuh), or the cuBLAS chunks alone. And 4096
// one-tile leaves (MHA, 32 heads), four to a block, a warp each (ItemKernel::item_warps).
std::vector<Problem> small_problems() {
  return {make_problem(make_shape(6, 2, 8, 2, 64, DType::bf16),
                       SharingTree::two_level(700, {40, 0}, {{3, 1, 90}, {5, 2, 1}}), 77),
          make_problem(make_shape(6, 1, 8, 2, 64, DType::bf16), SharingTree::prefix_suffix(700, std::vector<int>(6, 0)), 78),
          make_problem(make_shape(128, 1, 32, 32, 64, DType::bf16), SharingTree::prefix_suffix(300, std::vector<int>(128, 50)), 79)};
}

TEST_P(CudaPlan, GraphReplayOnAnotherStreamEqualsAnEagerRunBitForBit) {
  for (const Problem& problem : small_problems()) {
    SCOPED_TRACE(problem.shape.describe() + " over " + problem.tree.describe());
    replay_equals_eager_run(parse_backend_choice(GetParam()), problem);
  }
}

// A decode loop's use of `plan` (made for the layers' leaf capacities): two layers, each its own KV
// cache, run back to back in one captured graph, replayed at each step's leaf lengths (in device
// memory); every replay equals eager runs at those lengths.
void one_graph_over_two_caches(const AttentionBackend& b, AttentionPlan& plan, const StagedProblem& layer0,
                               const StagedProblem& layer1, const std::vector<std::vector<int>>& steps) {
  const Buffer lengths(b.memory(), static_cast<std::size_t>(layer0.shape().num_seqs) * sizeof(int));
  auto run = [&](const StagedProblem& layer, cudaStream_t s) {
    AttentionInputs in = layer.inputs();
    in.leaf_lengths = static_cast<const int*>(lengths.data());
    plan.run(in, layer.outputs(), Stream{s});
  };
  auto eager = [&](const StagedProblem& layer, const std::vector<int>& now) {
    b.memory().copy_from_host(lengths.data(), now.data(), lengths.bytes());
    layer.poison_outputs();
    run(layer, nullptr);
    b.memory().synchronize();
    return layer.fetch();
  };
  std::vector<Results> want;
  for (const auto& now : steps) {
    want.push_back(eager(layer0, now));
    want.push_back(eager(layer1, now));
  }

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  run(layer0, stream);
  run(layer1, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    b.memory().copy_from_host(lengths.data(), steps[i].data(), lengths.bytes());
    layer0.poison_outputs();
    layer1.poison_outputs();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const Results got[2] = {layer0.fetch(), layer1.fetch()};
    for (int layer = 0; layer < 2; ++layer) {
      const Results& w = want[2 * i + static_cast<std::size_t>(layer)];
      EXPECT_EQ(got[layer].o, w.o) << "step " << i << ", layer " << layer;
      EXPECT_EQ(got[layer].lse, w.lse) << "step " << i << ", layer " << layer;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_P(CudaPlan, OneGraphOverSeveralKvCachesFollowsTheLeafLengthsInDeviceMemory) {
  const BackendChoice choice = parse_backend_choice(GetParam());
  const AttentionBackend& b = backend(choice.backend);
  const AttentionShape shape = make_shape(3, 1, 8, 2, 64, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(500, {40, 40, 40});  // leaves at capacity
  const auto plan = b.plan(shape, tree, choice.options);
  const StagedProblem layer0(b.memory(), make_problem(shape, tree, 81), Storage::shared);
  const StagedProblem layer1(b.memory(), make_problem(shape, tree, 82), Storage::shared);
  one_graph_over_two_caches(b, *plan, layer0, layer1, {{1, 0, 7}, {2, 1, 8}, {40, 39, 9}});

  // A third cache's first run uploads its tables: capturing it is refused, not recorded broken.
  const StagedProblem layer2(b.memory(), make_problem(shape, tree, 83), Storage::shared);
  AttentionInputs in = layer2.inputs();
  const Buffer lengths(b.memory(), 3 * sizeof(int));
  in.leaf_lengths = static_cast<const int*>(lengths.data());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_THAT([&] { plan->run(in, layer2.outputs(), Stream{stream}); },
              ::testing::ThrowsMessage<std::logic_error>(HasSubstr("run it once before capturing")));
  cudaGraph_t broken = nullptr;
  (void)cudaStreamEndCapture(stream, &broken);
  if (broken != nullptr) cudaGraphDestroy(broken);
  cudaStreamDestroy(stream);
}

// Where cuda-hydragen's leaves fold the wgmma launch's rows (rule fold_leaves, MQA on compute capability
// 9.0), run after run in one graph, each fold reads the rows of its own run, never a run before: the
// leaves start before the wgmma launch ends (its programmatic dependent) and wait for it in the fold.
TEST_P(CudaPlan, LeavesThatFoldTheWideRowsReadTheirOwnRunsRows) {
  const BackendChoice choice = parse_backend_choice(GetParam());
  const AttentionBackend& b = backend(choice.backend);
  const AttentionShape shape = make_shape(5, 1, 8, 1, 64, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(50, std::vector<int>(5, 30));
  const auto plan = b.plan(shape, tree, choice.options);
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (GetParam() == "cuda-hydragen" && major == 9 && minor == 0) {
    ASSERT_THAT(decisions_cell(plan->decisions()), HasSubstr("fold_leaves=yes")) << "the case this test is for";
  }
  const StagedProblem layer0(b.memory(), make_problem(shape, tree, 81), Storage::shared);
  const StagedProblem layer1(b.memory(), make_problem(shape, tree, 82), Storage::shared);
  one_graph_over_two_caches(b, *plan, layer0, layer1,
                            {{30, 0, 7, 12, 1}, {1, 30, 8, 13, 2}, {2, 1, 30, 0, 29}, {30, 30, 30, 30, 30}});
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

// The kernel launches a plan's run() makes, as a captured graph holds them: name, grid and block.
struct KernelLaunch {
  std::string name;
  unsigned blocks, threads;
};

std::vector<KernelLaunch> captured_launches(AttentionPlan& plan, const StagedProblem& staged) {
  plan.run(staged.inputs(), staged.outputs());  // a first run binds the inputs: captured runs replay it
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  plan.run(staged.inputs(), staged.outputs(), Stream{stream});
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::vector<KernelLaunch> launches;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params{};
    CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &params));
    const char* name = nullptr;
    CUDA_CHECK(cudaFuncGetName(&name, params.func));
    launches.push_back({name, params.gridDim.x, params.blockDim.x});
  }
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return launches;
}

class LeavesOnTheirOwnSms : public DeviceTest {};

// cuda-hydragen's leaves=beside: the wgmma launch in fewer blocks than the SMs, the leaves in
// blocks of an SM's twelve warps on SMs it leaves, then the merge; chained (auto) or on a side stream.
TEST_F(LeavesOnTheirOwnSms, RunInWholeSmBlocksOnSmsTheWgmmaLaunchLeaves) {
  const AttentionBackend& b = backend("cuda-hydragen");
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(256, 64));
  const StagedProblem staged(b.memory(), make_problem(shape, tree, 84), Storage::shared);
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (const char* options : {"form=wide:leaves=beside", "form=wide:leaves=beside:leaf_launch=stream"}) {
    SCOPED_TRACE(options);
    const auto plan = b.plan(shape, tree, PlanOptions::parse(options));
    const std::vector<KernelLaunch> launches = captured_launches(*plan, staged);
    auto find = [&](const std::string& part) {
      for (const KernelLaunch& l : launches) {
        if (contains(l.name, part)) return l;
      }
      return KernelLaunch{"", 0, 0};
    };
    const KernelLaunch wgmma = find("segment_attention_wgmma");
    if (wgmma.name.empty()) GTEST_SKIP() << "no wgmma launch here (an sm_90a build on compute capability 9.0 has one)";
    const KernelLaunch leaves = find("segment_attention_mma"), merge = find("merge");
    EXPECT_LT(wgmma.blocks, static_cast<unsigned>(sms));
    EXPECT_GE(leaves.blocks, 1u);
    EXPECT_LE(leaves.blocks, static_cast<unsigned>(sms) - wgmma.blocks) << "a block per SM the wgmma launch leaves, at most";
    EXPECT_EQ(leaves.threads, 384u) << "an SM's twelve warps";
    EXPECT_FALSE(merge.name.empty()) << "the leaves do not fold the merge beside the wgmma launch";
    EXPECT_EQ(launches.size(), 3u);
  }
}

TEST_F(LeavesOnTheirOwnSms, AreRefusedBesideAnotherLeafKernel) {
  const AttentionBackend& b = backend("cuda-hydragen");
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(256, 64));
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0) GTEST_SKIP() << "leaves=beside applies beside the wgmma launch (compute capability 9.0)";
  EXPECT_THAT([&] { b.plan(shape, tree, PlanOptions::parse("form=wide:leaves=beside:narrow_kernel=token_warps")); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("narrow_kernel=token_warps")));
}

class MeasuredChoice : public DeviceTest {};

// cuda-hydragen:tune=measure times the planner's candidates when it plans and keeps the fastest: its
// decisions end with rule tune naming the kept plan and each candidate's median; a later plan of the
// same problem reuses the choice, timing nothing, and its workspace is the kept plan's alone.
TEST_F(MeasuredChoice, TimesTheCandidatesKeepsOneAndRemembersIt) {
  const AttentionBackend& b = backend("cuda-hydragen");
  const AttentionShape shape = make_shape(192, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(3000, std::vector<int>(192, 48));
  const PlanOptions options = PlanOptions::parse("tune=measure");
  const std::size_t measuring_bytes = b.workspace_bytes(shape, tree, options);
  const auto first = b.plan(shape, tree, options);
  const PlanDecision tune = first->decisions().back();
  ASSERT_EQ(tune.rule, "tune") << explain(first->decisions());
  EXPECT_THAT(tune.choice, ::testing::EndsWith(" (measured)"));
  EXPECT_THAT(tune.reason, HasSubstr("graph medians model "));
  EXPECT_THAT(tune.reason, HasSubstr("form=narrow "));
  EXPECT_THAT(tune.reason, ::testing::Not(HasSubstr("earlier plan")));

  const std::size_t kept_bytes = b.workspace_bytes(shape, tree, options);
  EXPECT_LT(kept_bytes, measuring_bytes) << "no scratch tensors, no flush buffer, no other candidates";
  const auto second = b.plan(shape, tree, options);
  EXPECT_EQ(second->decisions().back().choice, tune.choice);
  EXPECT_THAT(second->decisions().back().reason, HasSubstr("measured by an earlier plan of this problem"));
  // The remembered choice runs the same plan: the same bits (the harness checks every problem it covers
  // against the reference under this option).
  const StagedProblem staged(b.memory(), make_problem(shape, tree, 91), Storage::shared);
  std::vector<Results> results;
  for (const auto* plan : {&first, &second}) {
    staged.poison_outputs();
    (*plan)->run(staged.inputs(), staged.outputs());
    results.push_back(staged.fetch());
  }
  EXPECT_EQ(results[0].o, results[1].o);
  EXPECT_EQ(results[0].lse, results[1].lse);
}

INSTANTIATE_TEST_SUITE_P(AllCudaBackends, CudaPlan,
                         ::testing::Values("cuda-naive", "cuda-flash", "cuda-hydragen", "cuda-hydragen:form=wide",
                                           "cuda-hydragen:form=wide:leaves=beside", "cuda-hydragen:tune=measure",
                                           "cuda-hydragen-cublas"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace hydragen
