// A decode loop's KV cache grows by a token a step; AttentionInputs::leaf_lengths lets one plan,
// made for the leaves' capacities, serve every step. The specification, for every backend: a plan
// made for leaves of `capacity` tokens, run with leaf_lengths = n, computes what the reference
// computes on leaves of n tokens, whatever the unused tail of each leaf holds (here: random values,
// so a tail token that leaked into a result would show), under shared and redundant storage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend_params.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A tree of the same segments whose leaves are `capacity` long.
SharingTree with_leaves(const SharingTree& tree, const std::vector<int>& leaf_lengths) {
  std::vector<int> parents, lengths, leaves;
  for (int i = 0; i < tree.num_segments(); ++i) {
    parents.push_back(tree.parent(i));
    lengths.push_back(tree.length(i));
  }
  for (int s = 0; s < tree.num_seqs(); ++s) {
    leaves.push_back(tree.leaf(s));
    lengths[static_cast<std::size_t>(tree.leaf(s))] = leaf_lengths[static_cast<std::size_t>(s)];
  }
  return SharingTree::from_parents(parents, lengths, leaves);
}

struct GrowCase {
  std::string name;
  int q_len, q_heads, kv_heads, head_dim;
  SharingTree now;             // the leaves as long as they are in this run
  std::vector<int> capacity;   // each sequence's leaf capacity in the plan
};

std::vector<GrowCase> grow_cases() {
  using T = SharingTree;
  return {
      // A decode step: every leaf a few tokens short; one leaf empty; one full.
      {"decode_gqa4", 1, 8, 2, 128, T::prefix_suffix(300, {5, 0, 17, 64}), {16, 16, 40, 64}},
      // Capacities long enough to be split into parts that see nothing of the leaf this run.
      {"long_capacity_mqa", 1, 8, 1, 64, T::prefix_suffix(70, {3, 1}), {900, 700}},
      // Several queries per sequence (a question's tokens entering together): causal within the leaf.
      {"causal_q4", 4, 4, 2, 64, T::prefix_suffix(50, {3, 8, 20}), {24, 24, 24}},
      {"depth3", 1, 8, 4, 128, T::from_parents({-1, 0, 0, 1, 1, 2}, {90, 30, 12, 4, 0, 19}, {3, 4, 5}), {32, 8, 40}},
      {"flat_mha", 1, 4, 4, 64, T::flat({33, 1, 70}), {64, 64, 300}},
  };
}

// The planned problem: the now-problem's values, each leaf continued by random tokens up to its capacity.
Problem at_capacity(const Problem& now, const std::vector<int>& capacity) {
  Problem cap = make_problem(now.shape, with_leaves(now.tree, capacity), 99);
  cap.q = now.q;
  for (int i = 0; i < now.tree.num_segments(); ++i) {
    std::copy(now.k[i].begin(), now.k[i].end(), cap.k[i].begin());
    std::copy(now.v[i].begin(), now.v[i].end(), cap.v[i].begin());
  }
  return cap;
}

// The leaf lengths of this run as the staged tree counts them: under redundant storage a
// sequence's leaf is its whole path.
std::vector<int> run_leaf_lengths(const SharingTree& now, Storage storage) {
  std::vector<int> lengths;
  for (int s = 0; s < now.num_seqs(); ++s) {
    lengths.push_back(static_cast<int>(storage == Storage::shared ? now.length(now.leaf(s)) : now.path_length(s)));
  }
  return lengths;
}

Results run_grown(const AttentionBackend& b, const PlanOptions& options, const Problem& cap, const std::vector<int>& lengths,
                  Storage storage) {
  const StagedProblem staged(b.memory(), cap, storage);
  const std::unique_ptr<AttentionPlan> plan = b.plan(staged.shape(), staged.tree(), options);
  const Buffer leaf_lengths(b.memory(), lengths.size() * sizeof(int));
  b.memory().copy_from_host(leaf_lengths.data(), lengths.data(), leaf_lengths.bytes());
  AttentionInputs in = staged.inputs();
  in.leaf_lengths = static_cast<const int*>(leaf_lengths.data());
  staged.poison_outputs();
  plan->run(in, staged.outputs());
  b.memory().synchronize();
  return staged.fetch();
}


class LeafLengths : public ::testing::TestWithParam<std::string> {};

TEST_P(LeafLengths, APlanForCapacitiesComputesTheShorterLeavesExactly) {
  const AttentionBackend& b = backend(GetParam());
  const std::string unavailable = b.memory().unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << GetParam() << " cannot run here: " << unavailable;
  int ran = 0;
  for (const GrowCase& c : grow_cases()) {
    for (DType dtype : {DType::fp64, DType::fp32, DType::bf16}) {
      const AttentionShape shape = make_shape(c.now.num_seqs(), c.q_len, c.q_heads, c.kv_heads, c.head_dim, dtype);
      const Problem now = make_problem(shape, c.now, 7);
      const Problem cap = at_capacity(now, c.capacity);
      const Results ref = run_backend(backend("reference"), with_dtype(now, DType::fp64));
      for (Storage storage : {Storage::shared, Storage::redundant}) {
        const SharingTree planned = storage == Storage::shared ? cap.tree : cap.tree.flattened();
        if (!b.supports(shape, planned).ok) continue;
        for (const PlanOptions& options : b.variants()) {
          ++ran;
          const Results out = run_grown(b, options, cap, run_leaf_lengths(c.now, storage), storage);
          const Comparison cmp = compare(out, ref, tolerance_for(dtype, logit_bound(cap)));
          EXPECT_TRUE(cmp.pass) << c.name << " " << dtype_name(dtype) << " " << storage_name(storage) << " "
                                << options.text() << ": " << cmp.summary() << "\n  worst O element "
                                << index_name(shape, cmp.worst_index, false);
        }
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << GetParam() << " supports none of the cases";
}

INSTANTIATE_TEST_SUITE_P(AllBackends, LeafLengths, ::testing::ValuesIn(testing::backends_under_test()), testing::backend_name);

// Host backends read the lengths, so they check them.
TEST(LeafLengthsOnTheHost, ALengthPastTheCapacityOrTooShortForTheQueriesIsRefusedNamingTheSequence) {
  const AttentionShape shape = make_shape(2, 4, 4, 2, 64, DType::fp32);
  const Problem cap = make_problem(shape, SharingTree::prefix_suffix(20, {10, 10}), 3);
  for (const std::vector<int>& bad : {std::vector<int>{10, 11}, std::vector<int>{2, 10}}) {
    const StagedProblem staged(host_memory(), cap, Storage::shared);
    const auto plan = backend("cpu-hydragen").plan(staged.shape(), staged.tree());
    AttentionInputs in = staged.inputs();
    in.leaf_lengths = bad.data();
    EXPECT_THAT([&] { plan->run(in, staged.outputs()); },
                ThrowsMessage<std::invalid_argument>(HasSubstr(bad[0] == 10 ? "inputs.leaf_lengths[1] = 11" : "inputs.leaf_lengths[0] = 2")));
  }
}

}  // namespace
}  // namespace hydragen
