// The harness (DESIGN.md section 5): every registered backend except `reference` itself, under each
// of its variants (plan options it lists, e.g. cuda-hydragen:form=wide), on every case of harness.hpp,
// in every dtype it supports, with shared and with redundant storage, matches the fp64 `reference`
// run on exactly the same (dtype-rounded) inputs, on every element of O and LSE.
//
// Backends register themselves (backends.hpp); new ones join this matrix without edits here.
// Only supported combinations are instantiated; backends whose memory is unavailable here (no GPU)
// are skipped with the reason. Also here: a sweep over every other head dim a backend claims, and the
// contract that plan() refuses exactly what supports() refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "backend_params.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/harness.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::backend_name;
using testing::backends_under_test;
using testing::identifier;

constexpr int kHeadDims[] = {16, 32, 48, 64, 80, 96, 128, 160, 256};  // what a backend might claim


// ---- the harness ----------------------------------------------------------------------------------

struct HarnessParam {
  BackendChoice choice;  // the backend, the storage and the variant's options
  std::size_t case_index;
  DType dtype;
};

void PrintTo(const HarnessParam& p, std::ostream* os) {
  *os << p.choice.label() << " / " << harness_cases()[p.case_index].name << " / " << dtype_name(p.dtype) << " / "
      << storage_name(p.choice.storage);
}

// Only the combinations a backend claims: a dtype it refuses is not a test (the contract tests below
// check that refusals come with a reason), so the skip list stays for what cannot run here (no GPU).
std::vector<HarnessParam> harness_params() {
  std::vector<HarnessParam> params;
  for (const std::string& name : backends_under_test()) {
    for (const PlanOptions& variant : backend(name).variants()) {
      for (std::size_t c = 0; c < harness_cases().size(); ++c) {
        const HarnessCase& cs = harness_cases()[c];
        for (DType d : kHarnessDtypes) {
          for (Storage s : {Storage::shared, Storage::redundant}) {
            if (!backend(name).supports(cs.shape(d), cs.planned_tree(s)).ok) continue;
            HarnessParam p{BackendChoice{name, s, false, variant}, c, d};
            params.push_back(p);
          }
        }
      }
    }
  }
  return params;
}

std::string harness_name(const ::testing::TestParamInfo<HarnessParam>& info) {
  const HarnessParam& p = info.param;
  return identifier(p.choice.label()) + "__" + harness_cases()[p.case_index].name + "__" +
         std::string(dtype_name(p.dtype)) + "__" + std::string(storage_name(p.choice.storage));
}

class Harness : public ::testing::TestWithParam<HarnessParam> {};

TEST_P(Harness, MatchesTheFp64ReferenceOnEveryElement) {
  const HarnessParam& p = GetParam();
  const AttentionBackend& b = backend(p.choice.backend);
  const std::string unavailable = b.memory().unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << p.choice.backend << " cannot run here: " << unavailable;
  const HarnessCase& c = harness_cases()[p.case_index];
  const HarnessCheck check = check_case(b, c, p.dtype, p.choice.storage, p.choice.options);
  const Comparison& cmp = check.comparison;
  EXPECT_TRUE(cmp.pass) << check.shape.describe() << ", " << c.tree.describe() << ", q_scale " << c.q_scale << ", seed "
                        << c.seed << "\n  " << cmp.summary() << "\n  worst O element "
                        << index_name(check.shape, cmp.worst_index, false) << ": " << cmp.worst_value << " vs "
                        << cmp.worst_reference << "\n  worst LSE element " << index_name(check.shape, cmp.lse_worst_index, true)
                        << ": " << check.out.lse[cmp.lse_worst_index] << " vs " << check.reference.lse[cmp.lse_worst_index];
}

INSTANTIATE_TEST_SUITE_P(AllBackends, Harness, ::testing::ValuesIn(harness_params()), harness_name);

// The cases above use D 64 and 128; whatever other head dims a backend claims must be right too.
class HeadDimSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(HeadDimSweep, MatchesTheReferenceAtEveryHeadDimAndDtypeItClaims) {
  const AttentionBackend& b = backend(GetParam());
  const std::string unavailable = b.memory().unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << GetParam() << " cannot run here: " << unavailable;
  const SharingTree tree = SharingTree::prefix_suffix(33, {5, 3, 12});  // causal q_len 4: leaves >= 3
  int ran = 0;
  for (int head_dim : kHeadDims) {
    for (DType d : kHarnessDtypes) {
      const AttentionShape shape = make_shape(3, 4, 8, 2, head_dim, d);
      if (!b.supports(shape, tree).ok) continue;
      ++ran;
      const Problem problem = make_problem(shape, tree, 500 + static_cast<std::uint64_t>(head_dim));
      const Results ref = run_backend(backend("reference"), with_dtype(problem, DType::fp64));
      const Comparison cmp = compare(run_backend(b, problem), ref, tolerance_for(d, logit_bound(problem)));
      EXPECT_TRUE(cmp.pass) << shape.describe() << ": " << cmp.summary() << "\n  worst O element "
                            << index_name(shape, cmp.worst_index, false);
    }
  }
  if (ran == 0) GTEST_SKIP() << GetParam() << " supports none of the swept head dims and dtypes";
}

INSTANTIATE_TEST_SUITE_P(AllBackends, HeadDimSweep, ::testing::ValuesIn(backends_under_test()), backend_name);

// ---- what every backend promises about support ----------------------------------------------------

class BackendContract : public ::testing::TestWithParam<std::string> {};

// plan() must refuse exactly what supports() refuses, as Unsupported carrying supports()'s reason.
TEST_P(BackendContract, PlanRefusesWhatSupportsRefusesWithTheSameReason) {
  const AttentionBackend& b = backend(GetParam());
  const bool runnable = b.memory().unavailable_reason().empty();
  const SharingTree decode_tree = SharingTree::prefix_suffix(16, {3, 0});
  const SharingTree causal_tree = SharingTree::prefix_suffix(16, {3, 5});  // leaves >= q_len - 1
  for (DType d : kHarnessDtypes) {
    for (int head_dim : kHeadDims) {
      for (int q_len : {1, 4}) {
        const AttentionShape shape = make_shape(2, q_len, 8, 2, head_dim, d);
        const SharingTree& t = q_len == 1 ? decode_tree : causal_tree;
        const Support s = b.supports(shape, t);
        if (!s.ok) {
          EXPECT_FALSE(s.reason.empty()) << shape.describe();
          EXPECT_THAT([&] { b.plan(shape, t); },
                      ThrowsMessage<Unsupported>(AllOf(HasSubstr(s.reason), HasSubstr(b.name()))))
              << shape.describe();
        } else if (runnable) {
          EXPECT_NO_THROW(b.plan(shape, t)) << shape.describe();
        }
      }
    }
  }
}

// The harness cases use D 64 and 128 (DESIGN.md section 5): a backend that ran neither in any dtype
// would pass the harness by skipping everything.
TEST_P(BackendContract, SupportsHeadDims64And128InSomeDtype) {
  const AttentionBackend& b = backend(GetParam());
  for (int head_dim : {64, 128}) {
    bool any = false;
    std::ostringstream reasons;
    for (DType d : kHarnessDtypes) {
      const Support s = b.supports(make_shape(2, 1, 8, 2, head_dim, d), SharingTree::prefix_suffix(16, {3, 0}));
      any = any || s.ok;
      reasons << "\n  " << dtype_name(d) << ": " << s.reason;
    }
    EXPECT_TRUE(any) << b.name() << " supports no dtype at D=" << head_dim << reasons.str();
  }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendContract, ::testing::ValuesIn(list_backends()), backend_name);

}  // namespace
}  // namespace hydragen
