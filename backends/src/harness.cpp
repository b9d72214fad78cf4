#include "hydragen/harness.hpp"

#include <utility>
#include <vector>

#include "hydragen/backends.hpp"

namespace hydragen {

namespace {

// Depth 4 with every fan-out from 1 to 64: a root of 33 tokens, its one child (17), that child's two
// (5 and an empty one), 64 leaves under the first and 3 under the second, leaf lengths ragged from
// q_len - 1 up; sequences listed in a scrambled order, not the tree's (sequence s owns leaf
// (s * 37) % 67: 37 and 67 are coprime).
SharingTree depth4_fanout_1_to_64(int q_len) {
  std::vector<int> parents{-1, 0, 1, 1}, lengths{33, 17, 5, 0};
  std::vector<int> leaves;
  for (int i = 0; i < 67; ++i) {
    parents.push_back(i < 64 ? 2 : 3);
    lengths.push_back(q_len - 1 + (i * 5) % 11);
  }
  for (int s = 0; s < 67; ++s) leaves.push_back(4 + (s * 37) % 67);
  return SharingTree::from_parents(std::move(parents), std::move(lengths), std::move(leaves));
}

}  // namespace

const std::vector<HarnessCase>& harness_cases() {
  static const std::vector<HarnessCase> cases = [] {
    using T = SharingTree;
    std::vector<HarnessCase> c = {
        // name                                   q_len Hq Hkv  D   tree
        {"mha_d64_ragged_suffixes", 1, 4, 4, 64, T::prefix_suffix(100, {5, 0, 17, 33})},
        {"gqa4_d128", 1, 8, 2, 128, T::prefix_suffix(64, {0, 1, 40})},
        {"gqa8_d128", 1, 16, 2, 128, T::prefix_suffix(200, {3, 9})},
        {"mqa_hq8_d64", 1, 8, 1, 64, T::prefix_suffix(50, {7, 0, 12, 1, 30})},
        {"mqa_hq16_d128", 1, 16, 1, 128, T::prefix_suffix(300, {20, 21})},
        {"prefix_of_one_token", 1, 4, 1, 64, T::prefix_suffix(1, {10, 0, 4})},
        {"batch_of_one", 1, 8, 8, 128, T::prefix_suffix(77, {9})},
        {"flat_no_sharing", 1, 4, 4, 128, T::flat({33, 1, 70})},
        // Groups of 2 and 3 below a root; the second group segment is empty.
        {"two_level_groups", 1, 8, 2, 64, T::two_level(128, {32, 0}, {{5, 6}, {1, 0, 3}})},
        // Root 0 fans out to 1 (three leaves), 2 (one leaf) and leaf 3; segment 8 is a second root.
        {"depth3_uneven_fanout", 1, 8, 4, 128,
         T::from_parents({-1, 0, 0, 0, 1, 1, 1, 2, -1}, {90, 30, 12, 8, 4, 0, 19, 6, 25}, {5, 3, 7, 4, 8, 6})},
        // Segments listed leaves first: a parent may have a higher index than its children.
        {"segments_listed_before_their_parents", 1, 4, 2, 64,
         T::from_parents({2, 2, -1, 2, 1}, {6, 11, 40, 0, 3}, {3, 4, 0})},
        // Empty segments: in the middle of paths (1, 4), as leaves (3), and as a root (6).
        {"empty_segments", 1, 4, 2, 64,
         T::from_parents({-1, 0, 1, 1, 0, 4, -1, 6}, {64, 0, 9, 0, 0, 5, 0, 11}, {2, 3, 5, 7})},
        // Sequence 0's whole path is empty: its queries attend no key (O = 0, LSE = -inf).
        {"sequence_attending_no_key", 1, 4, 1, 64, T::from_parents({-1, 0, -1}, {0, 0, 5}, {1, 2})},
        // Causal: leaves of q_len - 1 = 3 tokens (the first query sees only the prefix) and longer.
        {"causal_q4_prefix_suffix", 4, 8, 2, 64, T::prefix_suffix(40, {3, 4, 10})},
        {"causal_q4_depth3_empty_middle", 4, 4, 1, 128,
         T::from_parents({-1, 0, 0, 1, 1, 1, 2}, {50, 20, 0, 3, 8, 5, 12}, {3, 4, 5, 6})},
        // No prefix and a 3-token leaf: the first query of sequence 0 attends nothing.
        {"causal_q4_first_query_attends_nothing", 4, 4, 4, 64, T::flat({3, 6})},
        {"extreme_logits_1e4", 1, 8, 2, 64, T::prefix_suffix(60, {5, 0, 20}), 1e4},
        {"extreme_logits_1e4_causal_depth3", 4, 8, 1, 128,
         T::from_parents({-1, 0, 0, 1, 1, 2}, {40, 10, 25, 3, 7, 4}, {3, 4, 5}), 1e4},
        {"long_prefix_2000", 1, 8, 1, 128, T::prefix_suffix(2000, {16, 3, 40, 0})},
        {"long_two_level_2000", 1, 8, 2, 64, T::two_level(1500, {300, 200}, {{10, 0, 64}, {5}})},
        {"depth4_fanout_1_to_64_scrambled", 1, 4, 2, 64, depth4_fanout_1_to_64(1)},
        {"causal_q4_depth4_fanout_1_to_64_scrambled", 4, 4, 1, 128, depth4_fanout_1_to_64(4)},
        // 32 sequences of a 2048-token prefix: on compute capability 9.0 cuda-hydragen splits it in 5-8
        // parts, which each query's leaf row folds (token_warps' long fold, kLongFoldRounds).
        {"mqa_b32_prefix_2048", 1, 8, 1, 128, T::prefix_suffix(2048, std::vector<int>(32, 64))},
    };
    for (std::size_t i = 0; i < c.size(); ++i) c[i].seed = 1000 + i;  // fixed per case
    return c;
  }();
  return cases;
}


HarnessCheck check_case(const AttentionBackend& b, const HarnessCase& c, DType dtype, Storage storage, const PlanOptions& options) {
  HarnessCheck check;
  check.shape = c.shape(dtype);
  const Problem problem = make_problem(check.shape, c.tree, c.seed, c.q_scale);
  check.reference = run_backend(backend("reference"), with_dtype(problem, DType::fp64));
  check.out = run_backend(b, problem, storage, options);  // outputs poisoned with NaN first
  check.comparison = compare(check.out, check.reference, tolerance_for(dtype, logit_bound(problem)));
  return check;
}

HarnessReport check_backend(const AttentionBackend& b) {
  HarnessReport report;
  for (const PlanOptions& variant : b.variants()) {
    for (const HarnessCase& c : harness_cases()) {
      for (DType dtype : kHarnessDtypes) {
        for (Storage storage : {Storage::shared, Storage::redundant}) {
          if (!b.supports(c.shape(dtype), c.planned_tree(storage)).ok) continue;
          ++report.checks;
          const HarnessCheck check = check_case(b, c, dtype, storage, variant);
          if (!check.comparison.pass) {
            report.failures.push_back(BackendChoice{b.name(), storage, false, variant}.label() + " " + c.name + " " +
                                      std::string(dtype_name(dtype)) + " " + std::string(storage_name(storage)) + ": " +
                                      check.comparison.summary());
          }
        }
      }
    }
  }
  return report;
}

}  // namespace hydragen
