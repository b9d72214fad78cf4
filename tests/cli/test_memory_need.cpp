// memory_need.hpp: what a problem needs is counted before anything is drawn, and the counts are
// what is actually allocated. Staging is counted exactly (a memory that records every allocation);
// a whole hydragen-diff check is measured as the peak resident memory of a child process: the
// estimate must cover it (a refusal threshold that undercounts lets the OOM through) and not exceed
// it by more than 25% + 32 MB (one that overcounts refuses problems that fit).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "diff/diff.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/memory_need.hpp"

namespace hydragen::diff {
namespace {

// Host memory that keeps count: bytes held now and at most.
class CountingMemory final : public DeviceMemory {
 public:
  std::string_view name() const override { return "counting"; }
  void* allocate(std::size_t bytes) const override {
    now_ += bytes;
    peak_ = std::max(peak_, now_);
    void* p = host_memory().allocate(bytes);
    sizes_.push_back({p, bytes});
    return p;
  }
  void release(void* ptr) const noexcept override {
    for (auto it = sizes_.begin(); it != sizes_.end(); ++it) {
      if (it->first == ptr) {
        now_ -= it->second;
        sizes_.erase(it);
        break;
      }
    }
    host_memory().release(ptr);
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) const override { host_memory().copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override { host_memory().copy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) const override { host_memory().copy(dst, src, bytes); }
  void fill(void* dst, unsigned char byte, std::size_t bytes) const override { host_memory().fill(dst, byte, bytes); }
  void synchronize() const override {}
  std::size_t available_bytes() const override { return host_memory().available_bytes(); }

  mutable std::size_t now_ = 0, peak_ = 0;
  mutable std::vector<std::pair<void*, std::size_t>> sizes_;
};

TEST(MemoryNeed, StagingIsCountedExactlyForBothStorages) {
  const SharingTree tree = SharingTree::two_level(300, {40, 0, 7}, {{5, 2}, {9}, {2, 2, 3}});
  for (DType dtype : {DType::bf16, DType::fp32}) {
    const AttentionShape shape = make_shape(tree.num_seqs(), 3, 8, 2, 64, dtype);
    for (Storage storage : {Storage::shared, Storage::redundant}) {
      const CountingMemory memory;
      const StagingBytes counted = staging_bytes(shape, tree, storage);
      {
        const StagedProblem staged(memory, ProblemSpec{shape, tree, 1}, storage);
        EXPECT_EQ(memory.now_, counted.resident) << storage_name(storage);
      }
      EXPECT_EQ(memory.peak_, counted.peak) << storage_name(storage);
      EXPECT_EQ(memory.now_, 0u);
    }
  }
}

TEST(MemoryNeed, ProblemAndResultsAreTheirFp64Tensors) {
  const SharingTree tree = SharingTree::prefix_suffix(100, {3, 4});
  const AttentionShape shape = make_shape(2, 2, 4, 2, 16, DType::bf16);
  // Q: 2 x 2 x 4 x 16; K and V: 107 tokens x 2 x 16 each.
  EXPECT_EQ(problem_bytes(shape, tree), (256 + 2 * 107 * 32) * sizeof(double));
  EXPECT_EQ(results_bytes(shape), (256 + 16) * sizeof(double));
}

TEST(MemoryNeed, TheRefusalNamesBothNumbers) {
  EXPECT_EQ(memory_refusal(host_memory(), 1, "x"), "");
  const std::string why = memory_refusal(host_memory(), std::size_t{1} << 62, "inputs");
  EXPECT_EQ(why.rfind("needs 4611686018.43 GB of host memory (inputs), ", 0), 0u) << why;
  EXPECT_NE(why.find(" GB available"), std::string::npos) << why;
}

// Peak resident bytes of a child process running `body`.
template <typename Body>
std::size_t child_peak_rss(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(wait4(pid, &status, 0, &usage), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
}

// One check on a problem of a few hundred MB, long enough that the process's own memory is noise.
// Each backend forks a fresh child: the parent has not started OpenMP threads (one test per
// process under ctest), so the child may.
class DiffPeak : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffPeak, TheEstimateCoversTheMeasuredPeakWithin25Percent) {
  const AttentionBackend& backend = hydragen::backend(GetParam());
  const AttentionBackend& reference = hydragen::backend("reference");
  Options options;
  options.seed = 3;
  const SharingTree tree = SharingTree::prefix_suffix(200000, {16, 9});
  const AttentionShape shape = make_shape(2, 1, 8, 1, 64, DType::bf16);
  const std::size_t baseline = child_peak_rss([] {});
  const std::size_t peak = child_peak_rss([&] {
    const Comparison c = check_backend(backend, reference_problem(shape, tree, options, reference), Storage::shared, {});
    if (!c.pass) std::abort();
  });
  const std::size_t used = peak - std::min(peak, baseline);
  const std::size_t estimate = diff_memory_need(backend, reference, shape, tree, Storage::shared, {}).host;
  RecordProperty("measured_bytes", std::to_string(used));
  RecordProperty("estimated_bytes", std::to_string(estimate));
  EXPECT_GE(estimate, used) << "measured " << format_bytes(used) << ", estimated " << format_bytes(estimate);
  EXPECT_LE(estimate, used + used / 4 + (std::size_t{32} << 20))
      << "measured " << format_bytes(used) << ", estimated " << format_bytes(estimate);
}

INSTANTIATE_TEST_SUITE_P(HostBackends, DiffPeak, ::testing::Values("cpu-flat", "cpu-hydragen"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace hydragen::diff
