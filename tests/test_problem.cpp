// problem.hpp: generated problems (deterministic, N(0,1), never zero, exact in their dtype), the
// logit bound, and staging: shared storage holds each segment once, redundant storage each
// sequence's whole path, outputs are poisoned so that anything a backend leaves unwritten is NaN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr DType kAllDtypes[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16};

SharingTree small_tree() { return SharingTree::two_level(9, {4, 0}, {{2, 3}, {5}}); }

std::vector<double> staged_values(const DeviceMemory& memory, const ConstTensor& t) {
  std::vector<std::byte> bytes(t.numel * dtype_size(t.dtype));
  memory.copy_to_host(bytes.data(), t.data, bytes.size());
  return decode_values(bytes.data(), t.numel, t.dtype);
}

// ---- make_problem -----------------------------------------------------------------------------------

TEST(MakeProblem, TheSameSeedGivesTheSameProblemAndAnotherSeedAnother) {
  const AttentionShape shape = make_shape(3, 1, 4, 2, 16, DType::fp32);
  const Problem a = make_problem(shape, small_tree(), 11), b = make_problem(shape, small_tree(), 11);
  const Problem c = make_problem(shape, small_tree(), 12);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.v, b.v);
  EXPECT_NE(a.q, c.q);
  EXPECT_NE(a.k[0], c.k[0]);
}

TEST(MakeProblem, TensorsHaveTheLayoutsSizes) {
  const AttentionShape shape = make_shape(3, 2, 4, 2, 16, DType::fp32);
  const SharingTree tree = small_tree();
  const Problem p = make_problem(shape, tree, 1);
  EXPECT_EQ(p.q.size(), 3u * 2 * 4 * 16);  // [B, q_len, Hq, D]
  ASSERT_EQ(p.k.size(), static_cast<std::size_t>(tree.num_segments()));
  ASSERT_EQ(p.v.size(), p.k.size());
  for (int s = 0; s < tree.num_segments(); ++s) {
    EXPECT_EQ(p.k[s].size(), static_cast<std::size_t>(tree.length(s)) * 2 * 16) << "segment " << s;  // [len, Hkv, D]
    EXPECT_EQ(p.v[s].size(), p.k[s].size()) << "segment " << s;
  }
}

TEST(MakeProblem, ValuesAreNonZeroAndExactlyRepresentableInTheDtype) {
  for (DType d : kAllDtypes) {
    const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, d), small_tree(), 5);
    std::vector<double> all = p.q;
    for (const auto& k : p.k) all.insert(all.end(), k.begin(), k.end());
    for (const auto& v : p.v) all.insert(all.end(), v.begin(), v.end());
    for (double x : all) {
      ASSERT_NE(x, 0.0) << dtype_name(d);
      ASSERT_EQ(round_through(x, d), x) << dtype_name(d);
    }
  }
}

TEST(MakeProblem, ValuesAreStandardNormal) {
  const Problem p = make_problem(make_shape(64, 1, 8, 8, 128, DType::fp64), SharingTree::prefix_suffix(1, std::vector<int>(64, 1)), 3);
  double sum = 0, sq = 0;
  for (double x : p.q) {
    sum += x;
    sq += x * x;
  }
  const double n = static_cast<double>(p.q.size()), mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.02);  // 65536 samples: standard error 0.004
  EXPECT_NEAR(sq / n - mean * mean, 1.0, 0.03);
}

TEST(MakeProblem, QScaleMultipliesOnlyTheQueries) {
  const AttentionShape shape = make_shape(3, 1, 4, 2, 16, DType::fp64);
  const Problem one = make_problem(shape, small_tree(), 9, 1.0), big = make_problem(shape, small_tree(), 9, 1e4);
  for (std::size_t i = 0; i < one.q.size(); ++i) ASSERT_EQ(big.q[i], 1e4 * one.q[i]) << i;
  EXPECT_EQ(big.k, one.k);
  EXPECT_EQ(big.v, one.v);
}

TEST(MakeProblem, RejectsANonPositiveOrNonFiniteQScale) {
  const AttentionShape shape = make_shape(3, 1, 4, 2, 16, DType::fp64);
  EXPECT_THAT([&] { make_problem(shape, small_tree(), 1, 0.0); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("q_scale"), HasSubstr("got 0"))));
  EXPECT_THAT([&] { make_problem(shape, small_tree(), 1, std::numeric_limits<double>::infinity()); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("q_scale"), HasSubstr("inf"))));
}

TEST(MakeProblem, ValidatesTheProblem) {
  EXPECT_THAT([] { make_problem(make_shape(2, 1, 4, 2, 16, DType::fp64), small_tree(), 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("num_seqs = 2")));
}

TEST(WithDtype, RoundsEveryValueThroughTheNewDtype) {
  const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, DType::fp64), small_tree(), 4);
  const Problem h = with_dtype(p, DType::fp16);
  EXPECT_EQ(h.shape.dtype, DType::fp16);
  for (std::size_t i = 0; i < p.q.size(); ++i) ASSERT_EQ(h.q[i], round_through(p.q[i], DType::fp16));
  for (std::size_t s = 0; s < p.k.size(); ++s) {
    for (std::size_t i = 0; i < p.k[s].size(); ++i) {
      ASSERT_EQ(h.k[s][i], round_through(p.k[s][i], DType::fp16));
      ASSERT_EQ(h.v[s][i], round_through(p.v[s][i], DType::fp16));
    }
  }
  // Widening to fp64 changes no value: what the harness hands the reference.
  const Problem back = with_dtype(h, DType::fp64);
  EXPECT_EQ(back.q, h.q);
  EXPECT_EQ(back.k, h.k);
}

// ---- logit_bound ----------------------------------------------------------------------------------

TEST(LogitBound, IsScaleTimesTheLargestQueryAndKeyNorms) {
  AttentionShape shape = make_shape(1, 1, 1, 1, 2, DType::fp64);
  shape.scale = 0.5f;
  // q = (3, 4): norm 5; keys (1, 0), (0, 2): largest norm 2. Bound: 0.5 * 5 * 2 = 5.
  const Problem p{shape, SharingTree::flat({2}), {3, 4}, {{1, 0, 0, 2}}, {{1, 1, 1, 1}}};
  EXPECT_DOUBLE_EQ(logit_bound(p), 5.0);
}

TEST(LogitBound, BoundsEveryScore) {
  const AttentionShape shape = make_shape(3, 2, 4, 2, 16, DType::fp64);
  const Problem p = make_problem(shape, small_tree(), 2, 3.0);
  const double bound = logit_bound(p);
  double largest = 0;
  const int d = shape.head_dim;
  for (std::size_t qr = 0; qr < p.q.size() / d; ++qr) {
    for (const auto& k : p.k) {
      for (std::size_t kr = 0; kr < k.size() / d; ++kr) {
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += p.q[qr * d + i] * k[kr * d + i];
        largest = std::max(largest, std::fabs(shape.scale * dot));
      }
    }
  }
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.1 * bound);  // and is not vacuous
}

// ---- storage and staging --------------------------------------------------------------------------

TEST(Storage, NamesRoundTripAndUnknownNamesThrow) {
  for (Storage s : {Storage::shared, Storage::redundant}) EXPECT_EQ(parse_storage(storage_name(s)), s);
  EXPECT_EQ(storage_name(Storage::redundant), "redundant");
  EXPECT_THAT([] { parse_storage("shard"); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("'shard'"), HasSubstr("shared, redundant"))));
}

TEST(StagedProblem, SharedStorageHoldsEachSegmentOnce) {
  for (DType d : kAllDtypes) {
    const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, d), small_tree(), 6);
    const StagedProblem staged(host_memory(), p, Storage::shared);
    EXPECT_EQ(staged.tree().num_segments(), p.tree.num_segments());
    EXPECT_EQ(staged.inputs().q.dtype, d);
    EXPECT_EQ(staged_values(host_memory(), staged.inputs().q), p.q) << dtype_name(d);
    ASSERT_EQ(staged.inputs().k.size(), p.k.size());
    for (std::size_t s = 0; s < p.k.size(); ++s) {
      EXPECT_EQ(staged_values(host_memory(), staged.inputs().k[s]), p.k[s]) << dtype_name(d) << " segment " << s;
      EXPECT_EQ(staged_values(host_memory(), staged.inputs().v[s]), p.v[s]) << dtype_name(d) << " segment " << s;
    }
    EXPECT_EQ(staged.outputs().o.numel, p.q.size());
    EXPECT_EQ(staged.outputs().o.dtype, d);
    EXPECT_EQ(staged.outputs().lse.numel, 3u * 4);
    EXPECT_EQ(staged.outputs().lse.dtype, lse_dtype(d));
  }
}

TEST(StagedProblem, RedundantStorageGivesEachSequenceACopyOfItsPath) {
  const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, DType::bf16), small_tree(), 8);
  const StagedProblem staged(host_memory(), p, Storage::redundant);
  const SharingTree& t = staged.tree();
  ASSERT_EQ(t.num_segments(), 3);
  EXPECT_EQ(t.depth(), 1);
  ASSERT_EQ(staged.inputs().k.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(t.length(t.leaf(s)), p.tree.path_length(s));
    std::vector<double> k, v;  // the path's segments, concatenated root first
    for (int seg : p.tree.path(s)) {
      k.insert(k.end(), p.k[seg].begin(), p.k[seg].end());
      v.insert(v.end(), p.v[seg].begin(), p.v[seg].end());
    }
    EXPECT_EQ(staged_values(host_memory(), staged.inputs().k[t.leaf(s)]), k) << "sequence " << s;
    EXPECT_EQ(staged_values(host_memory(), staged.inputs().v[t.leaf(s)]), v) << "sequence " << s;
  }
}

TEST(StagedProblem, PoisonedOutputsAreNanInEveryDtype) {
  for (DType d : kAllDtypes) {
    const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, d), small_tree(), 6);
    const StagedProblem staged(host_memory(), p, Storage::shared);
    staged.poison_outputs();
    const Results r = staged.fetch();
    for (double x : r.o) ASSERT_TRUE(std::isnan(x)) << dtype_name(d);
    for (double x : r.lse) ASSERT_TRUE(std::isnan(x)) << dtype_name(d);
  }
}

TEST(StagedProblem, RedundantAndSharedStorageGiveTheSameResult) {
  const SharingTree tree = SharingTree::from_parents({-1, 0, 0, 1, 1, 2}, {40, 0, 13, 7, 2, 5}, {3, 4, 5});
  const Problem p = make_problem(make_shape(3, 2, 8, 2, 32, DType::fp64), tree, 21);
  const AttentionBackend& decomposed = backend("reference-decomposed");
  const Results shared = run_backend(decomposed, p, Storage::shared);
  const Results redundant = run_backend(decomposed, p, Storage::redundant);
  const Comparison c = compare(redundant, shared, tolerance_for(DType::fp64, 0));
  EXPECT_TRUE(c.pass) << c.summary();
}

// A plan that checks its tensors and writes only the first `written` O and LSE values (fp64).
class PartialWritePlan final : public AttentionPlan {
 public:
  PartialWritePlan(const AttentionShape& shape, const SharingTree& tree, std::size_t written)
      : shape_(shape), tree_(tree), written_(written) {}
  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    check_io(shape_, tree_, in, out);
    for (std::size_t i = 0; i < written_ && i < out.o.numel; ++i) static_cast<double*>(out.o.data)[i] = 0.0;
    for (std::size_t i = 0; i < written_ && i < out.lse.numel; ++i) static_cast<double*>(out.lse.data)[i] = 0.0;
  }

 private:
  AttentionShape shape_;
  SharingTree tree_;
  std::size_t written_;
};

class PartialWriter final : public AttentionBackend {
 public:
  explicit PartialWriter(std::size_t written) : written_(written) {}
  std::string name() const override { return "partial-writer"; }
  std::string summary() const override { return "test double: writes only the first outputs"; }
  const DeviceMemory& memory() const override { return host_memory(); }
  Support supports(const AttentionShape&, const SharingTree&) const override { return Support::yes(); }

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape& shape, const SharingTree& tree,
                                           const PlanOptions&) const override {
    return std::make_unique<PartialWritePlan>(shape, tree, written_);
  }

 private:
  std::size_t written_;
};

TEST(RunBackend, OutputsABackendDoesNotWriteAreNan) {
  const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, DType::fp64), small_tree(), 6);
  const Results r = run_backend(PartialWriter(10), p);
  for (std::size_t i = 0; i < r.o.size(); ++i) ASSERT_EQ(std::isnan(r.o[i]), i >= 10) << i;
  for (std::size_t i = 0; i < r.lse.size(); ++i) ASSERT_EQ(std::isnan(r.lse[i]), i >= 10) << i;
}

TEST(RunBackend, AnOutputMissingOneElementFailsTheComparison) {
  const Problem p = make_problem(make_shape(3, 1, 4, 2, 16, DType::fp64), small_tree(), 6);
  const Results ref = run_backend(backend("reference"), p);
  Results out = ref;
  out.o.back() = run_backend(PartialWriter(0), p).o.back();  // one unwritten element
  const Comparison c = compare(out, ref, tolerance_for(DType::fp64, logit_bound(p)));
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failed_elements, 1u);
  EXPECT_EQ(c.worst_index, ref.o.size() - 1);
}

}  // namespace
}  // namespace hydragen

namespace hydragen {
namespace {

// The sweep stages problems from a spec without an fp64 copy; the values must be make_problem's.
TEST(StagedFromSpec, HoldsExactlyTheTensorsOfMakeProblem) {
  for (DType dtype : {DType::fp32, DType::fp16, DType::bf16}) {
    for (Storage storage : {Storage::shared, Storage::redundant}) {
      const ProblemSpec spec{make_shape(3, 2, 8, 2, 64, dtype), SharingTree::two_level(40, {7, 0}, {{1, 5}, {9}}), 99, 3.0};
      const Problem problem = make_problem(spec.shape, spec.tree, spec.seed, spec.q_scale);
      const StagedProblem from_problem(host_memory(), problem, storage), from_spec(host_memory(), spec, storage);
      auto same = [&](const ConstTensor& a, const ConstTensor& b) {
        ASSERT_EQ(a.numel, b.numel);
        EXPECT_EQ(a.dtype, b.dtype);
        if (a.numel > 0) {
          EXPECT_EQ(std::memcmp(a.data, b.data, a.numel * dtype_size(a.dtype)), 0);
        }
      };
      same(from_problem.inputs().q, from_spec.inputs().q);
      ASSERT_EQ(from_problem.inputs().k.size(), from_spec.inputs().k.size());
      for (std::size_t i = 0; i < from_spec.inputs().k.size(); ++i) {
        same(from_problem.inputs().k[i], from_spec.inputs().k[i]);
        same(from_problem.inputs().v[i], from_spec.inputs().v[i]);
      }
    }
  }
}

}  // namespace
}  // namespace hydragen
