// memory_need.hpp on the GPU: what staging and a plan allocate on the device, measured as the drop
// of the device's free memory, against staging_bytes + workspace_bytes, for every CUDA backend and
// form in both storages. cudaMemGetInfo moves in 2 MiB pages and a plan's side stream and events
// take a little of their own: the count may fall short of the drop by 64 MiB (a fraction of a
// percent of the problems here) and exceed it by 8 MiB, plus, for cuBLAS, the allowance for the
// library itself, which only the process's first handle spends. GPU only.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "device_fixture.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/memory_need.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

struct Case {
  std::string backend;  // with its plan options
  Storage storage;
};

class DeviceMemoryNeed : public DeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(DeviceMemoryNeed, StagingAndPlanAllocateWhatWasCounted) {
  const BackendChoice choice = parse_backend_choice(GetParam().backend);
  const AttentionBackend& b = backend(choice.backend);
  const Storage storage = GetParam().storage;
  // A shared prefix long enough for cuBLAS chunks and split partials, suffixes of several lengths.
  std::vector<int> suffixes(96);
  for (std::size_t i = 0; i < suffixes.size(); ++i) suffixes[i] = 16 + static_cast<int>(i % 7) * 37;
  const SharingTree tree = SharingTree::prefix_suffix(32768, suffixes);
  const AttentionShape shape = make_shape(tree.num_seqs(), 2, 16, 2, 128, DType::bf16);
  const SharingTree& planned = storage == Storage::shared ? tree : tree.flattened();
  const std::size_t counted = staging_bytes(shape, tree, storage).resident + b.workspace_bytes(shape, planned, choice.options);

  const std::size_t before = b.memory().available_bytes();
  const StagedProblem staged(b.memory(), ProblemSpec{shape, tree, 5}, storage);
  const auto plan = b.plan(staged.shape(), staged.tree(), choice.options);
  plan->run(staged.inputs(), staged.outputs());  // nothing more is allocated by a run
  b.memory().synchronize();
  const std::size_t used = before - b.memory().available_bytes();
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_GE(counted + 64 * kMiB, used) << "counted " << format_bytes(counted) << ", allocated " << format_bytes(used);
  const std::size_t library = choice.backend == "cuda-hydragen-cublas" ? 96 * kMiB : 0;
  EXPECT_LE(counted, used + 8 * kMiB + library) << "counted " << format_bytes(counted) << ", allocated " << format_bytes(used);
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* b : {"cuda-naive", "cuda-flash", "cuda-hydragen", "cuda-hydragen:form=wide", "cuda-hydragen:form=narrow",
                        "cuda-hydragen:form=wide:wide_kernel=mma64", "cuda-hydragen-cublas"}) {
    for (Storage s : {Storage::shared, Storage::redundant}) all.push_back({b, s});
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(EveryCudaBackend, DeviceMemoryNeed, ::testing::ValuesIn(cases()), [](const auto& param_info) {
  std::string name = param_info.param.backend + "_" + std::string(storage_name(param_info.param.storage));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
});

}  // namespace
}  // namespace hydragen
