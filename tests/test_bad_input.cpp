// Bad input never crashes or computes garbage (DESIGN.md section 5): each case raises a clear
// exception naming the field and the value. Plan-time errors come from backend.plan(); tensor errors
// from plan->run() on a staged problem whose tensor views are then corrupted. Every registered
// backend is held to this, in a dtype it supports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "backend_params.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Matcher;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

constexpr DType kAllDtypes[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16};

// B=3, Hq=4, Hkv=2, D=64. Segments: 0 root (9 tokens), 1 group (4), 2 and 3 its leaves (2, 3),
// 4 an empty group, 5 its leaf (5).
constexpr int kB = 3, kHq = 4, kHkv = 2, kD = 64;
SharingTree base_tree() { return SharingTree::two_level(9, {4, 0}, {{2, 3}, {5}}); }

Matcher<std::string> names(const std::string& a, const std::string& b = "") {
  return b.empty() ? Matcher<std::string>(HasSubstr(a)) : Matcher<std::string>(AllOf(HasSubstr(a), HasSubstr(b)));
}

class BadInput : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (DType d : kAllDtypes) {
      if (b().supports(shape(d), base_tree()).ok) {
        dtype_ = d;
        return;
      }
    }
    GTEST_SKIP() << GetParam() << " supports none of the dtypes for " << shape(DType::fp32).describe();
  }

  const AttentionBackend& b() const { return backend(GetParam()); }
  AttentionShape shape(DType d) const { return make_shape(kB, 1, kHq, kHkv, kD, d); }
  AttentionShape shape() const { return shape(dtype_); }
  DType dtype_ = DType::fp32;
};

using testing::backend_name;

// ---- plan time: the shape and the tree ------------------------------------------------------------

TEST_P(BadInput, QHeadsNotAMultipleOfKvHeads) {
  AttentionShape s = shape();
  s.q_heads = 6;
  s.kv_heads = 4;
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("q_heads (6)", "kv_heads (4)")));
}

TEST_P(BadInput, NonPositiveNumSeqs) {
  AttentionShape s = shape();
  s.num_seqs = 0;
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("num_seqs", "got 0")));
}

TEST_P(BadInput, NonPositiveQLen) {
  AttentionShape s = shape();
  s.q_len = -2;
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("q_len", "got -2")));
}

TEST_P(BadInput, NonPositiveQHeads) {
  AttentionShape s = shape();
  s.q_heads = 0;
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("q_heads", "got 0")));
}

TEST_P(BadInput, NonPositiveKvHeads) {
  AttentionShape s = shape();
  s.kv_heads = 0;  // must not reach q_heads % kv_heads
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("kv_heads", "got 0")));
}

TEST_P(BadInput, NonPositiveHeadDim) {
  AttentionShape s = shape();
  s.head_dim = -64;
  EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("head_dim", "got -64")));
}

TEST_P(BadInput, ScaleNotPositiveAndFinite) {
  const std::pair<float, const char*> bad[] = {{0.0f, "got 0"},
                                               {-0.5f, "got -0.5"},
                                               {std::numeric_limits<float>::quiet_NaN(), "got nan"},
                                               {std::numeric_limits<float>::infinity(), "got inf"}};
  for (const auto& [scale, text] : bad) {
    AttentionShape s = shape();
    s.scale = scale;
    EXPECT_THAT([&] { b().plan(s, base_tree()); }, ThrowsMessage<std::invalid_argument>(names("scale", text)));
  }
}

TEST_P(BadInput, NumSeqsNotMatchingTheTree) {
  const SharingTree two = SharingTree::prefix_suffix(9, {2, 3});
  EXPECT_THAT([&] { b().plan(shape(), two); },
              ThrowsMessage<std::invalid_argument>(names("num_seqs = 3", "tree has 2 sequences")));
}

TEST_P(BadInput, LeafShorterThanQLenMinusOne) {
  AttentionShape s = shape();
  s.q_len = 4;  // leaves need >= 3 tokens; sequence 0's leaf (segment 2) has 2
  EXPECT_THAT([&] { b().plan(s, base_tree()); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("sequence 0"), HasSubstr("leaf segment 2 has 2 tokens"),
                                                         HasSubstr("q_len = 4"))));
}

TEST_P(BadInput, LeafOfExactlyQLenMinusOneTokensIsAccepted) {
  if (!b().memory().unavailable_reason().empty()) GTEST_SKIP() << b().memory().unavailable_reason();
  AttentionShape s = shape();
  s.q_len = 3;  // shortest leaf has 2 = q_len - 1 tokens: its first query sees only the ancestors
  const Support support = b().supports(s, base_tree());
  if (!support.ok) GTEST_SKIP() << support.reason;
  EXPECT_NO_THROW(b().plan(s, base_tree()));
}

// ---- run time: the tensors ------------------------------------------------------------------------

// A planned, staged problem whose tensor views a test corrupts before calling run().
class BadTensors : public BadInput {
 protected:
  void SetUp() override {
    BadInput::SetUp();
    if (IsSkipped()) return;
    const std::string why = b().memory().unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << GetParam() << " cannot run here: " << why;
    problem_ = std::make_unique<Problem>(make_problem(shape(), base_tree(), 17));
    staged_ = std::make_unique<StagedProblem>(b().memory(), *problem_, Storage::shared);
    plan_ = b().plan(staged_->shape(), staged_->tree());
    in = staged_->inputs();
    out = staged_->outputs();
  }
  void run() { plan_->run(in, out); }
  // A dtype other than the problem's (and, for the LSE, other than lse_dtype of it).
  static DType other_than(DType d) { return d == DType::fp16 ? DType::bf16 : DType::fp16; }

  std::unique_ptr<Problem> problem_;
  std::unique_ptr<StagedProblem> staged_;
  std::unique_ptr<AttentionPlan> plan_;
  AttentionInputs in;
  AttentionOutputs out;
};

TEST_P(BadTensors, UncorruptedTensorsRun) {  // the baseline every other test here breaks one thing of
  EXPECT_NO_THROW(run());
}

TEST_P(BadTensors, NullQ) {
  in.q.data = nullptr;
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("inputs.q", "null data pointer")));
}

TEST_P(BadTensors, NullKSegment) {
  in.k[2].data = nullptr;
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("inputs.k[2]", "null data pointer")));
}

TEST_P(BadTensors, NullVSegment) {
  in.v[5].data = nullptr;
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("inputs.v[5]", "null data pointer")));
}

TEST_P(BadTensors, NullO) {
  out.o.data = nullptr;
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("outputs.o", "null data pointer")));
}

TEST_P(BadTensors, NullLse) {
  out.lse.data = nullptr;
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("outputs.lse", "null data pointer")));
}

// Segment 4 has no tokens: a null view is how a caller says so, and the result is still right.
TEST_P(BadTensors, EmptySegmentMayBeNull) {
  in.k[4] = ConstTensor{nullptr, dtype_, 0};
  in.v[4] = ConstTensor{nullptr, dtype_, 0};
  staged_->poison_outputs();
  ASSERT_NO_THROW(run());
  const Results ref = run_backend(backend("reference"), with_dtype(*problem_, DType::fp64));
  const Comparison c = compare(staged_->fetch(), ref, tolerance_for(dtype_, logit_bound(*problem_)));
  EXPECT_TRUE(c.pass) << c.summary();
}

TEST_P(BadTensors, QBufferTooSmall) {
  const std::size_t need = std::size_t{kB} * 1 * kHq * kD;  // [B, q_len, Hq, D]
  in.q.numel = need - 1;
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(names("inputs.q", "buffer holds " + std::to_string(need - 1) +
                                                                          " elements, the shape needs " + std::to_string(need))));
}

TEST_P(BadTensors, KBufferTooSmall) {
  const std::size_t need = std::size_t{9} * kHkv * kD;  // segment 0: [9 tokens, Hkv, D]
  in.k[0].numel = need - 1;
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(names("inputs.k[0]", "buffer holds " + std::to_string(need - 1) +
                                                                             " elements, the shape needs " + std::to_string(need))));
}

TEST_P(BadTensors, VBufferTooSmall) {
  const std::size_t need = std::size_t{5} * kHkv * kD;  // segment 5: [5 tokens, Hkv, D]
  in.v[5].numel = 0;
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(names("inputs.v[5]", "buffer holds 0 elements, the shape needs " +
                                                                             std::to_string(need))));
}

TEST_P(BadTensors, OBufferTooSmall) {
  const std::size_t need = std::size_t{kB} * kHq * kD;
  out.o.numel = need / 2;
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(names("outputs.o", "buffer holds " + std::to_string(need / 2) +
                                                                           " elements, the shape needs " + std::to_string(need))));
}

TEST_P(BadTensors, LseBufferTooSmall) {
  const std::size_t need = std::size_t{kB} * kHq;  // [B, q_len, Hq]
  out.lse.numel = need - 1;
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(names("outputs.lse", "buffer holds " + std::to_string(need - 1) +
                                                                             " elements, the shape needs " + std::to_string(need))));
}

TEST_P(BadTensors, QOfTheWrongDtype) {
  in.q.dtype = other_than(dtype_);
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(AllOf(
                  HasSubstr("inputs.q: dtype " + std::string(dtype_name(other_than(dtype_)))),
                  HasSubstr("the problem is " + std::string(dtype_name(dtype_))))));
}

TEST(DtypeRule, NamesBothTensorsAndTheRule) {  // the Python package's words: q in fp64, k in fp32
  EXPECT_THAT([] { require_same_dtype("q", DType::fp64, "k[0]", DType::fp32); },
              ThrowsMessage<std::invalid_argument>(StrEq("q, k and v must share one dtype: q is fp64, k[0] is fp32")));
  EXPECT_NO_THROW(require_same_dtype("q", DType::bf16, "v[3]", DType::bf16));
}

TEST_P(BadTensors, KSegmentOfTheWrongDtypeNamesBothAndTheRule) {
  in.k[3].dtype = other_than(dtype_);
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(HasSubstr(
                                  "q, k and v must share one dtype: inputs.q is " + std::string(dtype_name(dtype_)) +
                                  ", inputs.k[3] is " + std::string(dtype_name(other_than(dtype_))))));
}

TEST_P(BadTensors, LseOfTheWrongDtype) {
  out.lse.dtype = other_than(lse_dtype(dtype_));
  EXPECT_THAT([&] { run(); },
              ThrowsMessage<std::invalid_argument>(AllOf(
                  HasSubstr("outputs.lse: dtype " + std::string(dtype_name(other_than(lse_dtype(dtype_))))),
                  HasSubstr("the problem is " + std::string(dtype_name(lse_dtype(dtype_)))))));
}

TEST_P(BadTensors, TooFewKSegments) {
  in.k.pop_back();
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("inputs.k has 5 segments", "the tree has 6")));
}

TEST_P(BadTensors, TooManyVSegments) {
  in.v.push_back(in.v.back());
  EXPECT_THAT([&] { run(); }, ThrowsMessage<std::invalid_argument>(names("inputs.v has 7 segments", "the tree has 6")));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BadInput, ::testing::ValuesIn(list_backends()), backend_name);
INSTANTIATE_TEST_SUITE_P(AllBackends, BadTensors, ::testing::ValuesIn(list_backends()), backend_name);

// ---- the backends themselves ----------------------------------------------------------------------

TEST(BadBackend, ReferenceRefusesFp32AsUnsupportedWithItsReason) {
  const AttentionShape s = make_shape(kB, 1, kHq, kHkv, kD, DType::fp32);
  for (const char* name : {"reference", "reference-decomposed"}) {
    const AttentionBackend& r = backend(name);
    const Support support = r.supports(s, base_tree());
    ASSERT_FALSE(support.ok);
    EXPECT_THAT(support.reason, HasSubstr("fp32"));
    EXPECT_THAT([&] { r.plan(s, base_tree()); },
                ThrowsMessage<Unsupported>(AllOf(HasSubstr(std::string("'") + name + "'"), HasSubstr(support.reason))));
  }
}

// The mma.sync kernels count a segment's K or V in 16-byte chunks in 32 bits.
TEST(BadBackend, CudaBackendsRefuseASegmentOf32GibOrMore) {
  const AttentionShape s = make_shape(1, 1, 8, 8, 128, DType::bf16);  // 2 KiB of K a token
  const int limit = 1 << 24;                                          // tokens in 32 GiB
  int tried = 0;
  for (const std::string& name : list_backends()) {
    if (name.rfind("cuda-", 0) != 0) continue;
    ++tried;
    const Support at_limit = backend(name).supports(s, SharingTree::prefix_suffix(limit, {1}));
    EXPECT_FALSE(at_limit.ok) << name;
    EXPECT_THAT(at_limit.reason, AllOf(HasSubstr("segment 0"), HasSubstr("32 GiB"))) << name;
    EXPECT_TRUE(backend(name).supports(s, SharingTree::prefix_suffix(limit - 1, {1})).ok) << name;
  }
  if (tried == 0) GTEST_SKIP() << "a build without CUDA backends";
}

TEST(BadBackend, UnknownNameListsTheKnownBackends) {
  Matcher<std::string> all_named = HasSubstr("'nope'");
  for (const std::string& known : list_backends()) all_named = AllOf(all_named, HasSubstr(known));
  EXPECT_THAT([] { backend("nope"); }, ThrowsMessage<std::invalid_argument>(all_named));
}

}  // namespace
}  // namespace hydragen
