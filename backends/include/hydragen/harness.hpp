#pragma once
// The harness (DESIGN.md section 5): the problems every backend is checked on, and the check, against
// the fp64 `reference` run on exactly the same (dtype-rounded) inputs, on every element of O and LSE.
// tests/test_backends.cpp runs each (backend, variant, case, dtype, storage) as a test; another
// project runs check_backend on a backend of its own (README, "From your C++ project").
//
// The cases cover what DESIGN.md section 5 names (GQA ratios 1, 4, 8 and MQA; D 64 and 128; ragged
// suffixes including 0; a prefix of 1 token; q_len > 1 with the causal leaf; trees of depth 3 and 4
// with uneven fan-out up to 64 and sequences out of tree order; extreme logits; empty segments;
// B = 1), small enough that the whole matrix runs in seconds.
#include <cstdint>
#include <string>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {

struct HarnessCase {
  std::string name;  // letters, digits and '_' only: it becomes part of a test name
  int q_len, q_heads, kv_heads, head_dim;
  SharingTree tree;
  double q_scale = 1.0;  // 1e4: scores of about +-1e4
  std::uint64_t seed = 0;

  AttentionShape shape(DType dtype) const { return make_shape(tree.num_seqs(), q_len, q_heads, kv_heads, head_dim, dtype); }
  // Redundant storage hands a backend the flattened tree: that is what it has to support.
  SharingTree planned_tree(Storage storage) const { return storage == Storage::shared ? tree : tree.flattened(); }
};

const std::vector<HarnessCase>& harness_cases();

// Every dtype a backend may take.
inline constexpr DType kHarnessDtypes[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16};

// One check: the case in `dtype` through `backend` (its `storage` and plan `options`) against the
// fp64 reference. The outputs are kept for a failure's report.
struct HarnessCheck {
  AttentionShape shape;
  Results out, reference;
  Comparison comparison;
};
HarnessCheck check_case(const AttentionBackend& backend, const HarnessCase& c, DType dtype, Storage storage,
                        const PlanOptions& options = {});

// Every case, in every dtype the backend supports, with shared and redundant storage, under each of
// its variants: how many checks ran, which failed (one line each: variant, case, dtype, storage and
// compare()'s summary). Throws what plan() and run() throw.
struct HarnessReport {
  int checks = 0;
  std::vector<std::string> failures;
  bool ok() const { return checks > 0 && failures.empty(); }
};
HarnessReport check_backend(const AttentionBackend& backend);

}  // namespace hydragen
