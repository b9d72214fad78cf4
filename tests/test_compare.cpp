// compare.hpp: how outputs are judged. Every element is checked against rtol*|r| + atol*rms(its row
// of ref), a row being the outputs that share one LSE value;
// NaN never passes; LSE within lse_tol*max(1, |r|); two -inf LSEs (a query with no keys) agree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "hydragen/compare.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const Results kRef{{1, 2, -3, 4}, {2, -500}};
const Tolerance kTol{1e-6, 0, 1e-6, 1e-6};  // rtol, atol, l2, lse

TEST(Compare, IdenticalResultsPassWithZeroError) {
  const Comparison c = compare(kRef, kRef, kTol);
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.max_abs_error, 0);
  EXPECT_EQ(c.rel_l2_error, 0);
  EXPECT_EQ(c.lse_max_abs_error, 0);
  EXPECT_EQ(c.failed_elements, 0u);
  EXPECT_THAT(c.summary(), HasSubstr("PASS"));
}

TEST(Compare, ReportsTheMaxAbsoluteAndRelativeL2Errors) {
  Results out = kRef;
  out.o[1] += 0.25;
  out.o[3] -= 0.125;
  const Comparison c = compare(out, kRef, Tolerance{1, 0, 1, 1});
  EXPECT_EQ(c.max_abs_error, 0.25);
  EXPECT_DOUBLE_EQ(c.rel_l2_error, std::sqrt((0.25 * 0.25 + 0.125 * 0.125) / 30.0));  // ||ref||^2 = 1+4+9+16
  EXPECT_TRUE(c.pass);
}

TEST(Compare, NanInOFailsAndIsTheWorstElement) {
  Results out = kRef;
  out.o[2] = kNaN;
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failed_elements, 1u);
  EXPECT_EQ(c.worst_index, 2u);
  EXPECT_TRUE(std::isnan(c.worst_value));
  EXPECT_EQ(c.worst_reference, -3);
  EXPECT_THAT(c.summary(), HasSubstr("FAIL"));
}

// The reported maximum must not forget a NaN because later elements are finite.
TEST(Compare, NanAnywhereMakesTheMaxErrorsNan) {
  Results out = kRef;
  out.o[0] = kNaN;
  out.lse[0] = kNaN;
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_TRUE(std::isnan(c.max_abs_error)) << c.summary();
  EXPECT_TRUE(std::isnan(c.lse_max_abs_error)) << c.summary();
  EXPECT_FALSE(c.pass);
}

TEST(Compare, InfInOFails) {
  Results out = kRef;
  out.o[3] = kInf;
  EXPECT_FALSE(compare(out, kRef, kTol).pass);
}

TEST(Compare, OValueOffByMoreThanRtolFails) {
  Results out = kRef;
  out.o[2] = -3 * (1 + 2e-6);  // bound: 1e-6 * 3
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failed_elements, 1u);
  EXPECT_EQ(c.worst_index, 2u);
}

TEST(Compare, OValueOffByLessThanRtolPasses) {
  Results out = kRef;
  out.o[2] = -3 * (1 + 0.5e-6);
  EXPECT_TRUE(compare(out, kRef, kTol).pass);
}

TEST(Compare, AtolIsInUnitsOfTheReferenceRms) {
  const Results ref{{0, 3, 4, 0}, {0}};  // rms = sqrt(25 / 4) = 2.5
  const Tolerance tol{0, 1e-6, 1};
  Results out = ref;
  out.o[0] = 2.4e-6;
  EXPECT_TRUE(compare(out, ref, tol).pass);
  out.o[0] = 2.6e-6;
  EXPECT_FALSE(compare(out, ref, tol).pass);
}

// The error of probabilities rounded before P V scales with the row's own outputs: a query that
// attends 7 tokens has outputs (and that error) several times those of one attending 1000, so the
// bound of one row must not come from the others.
TEST(Compare, AtolIsInUnitsOfTheRmsOfTheElementsOwnRow) {
  const Results ref{{0, 3, 4, 0, 0, 0.3, 0.4, 0}, {0, 0}};  // row rms 2.5 and 0.25
  const Tolerance tol{0, 1e-6, 1};
  Results out = ref;
  out.o[0] = 2.4e-6;  // within 1e-6 * 2.5
  out.o[4] = 0.24e-6;  // within 1e-6 * 0.25
  EXPECT_TRUE(compare(out, ref, tol).pass);
  out.o[4] = 0.26e-6;  // within the whole tensor's rms (1.77) but not its row's
  const Comparison c = compare(out, ref, tol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failed_elements, 1u);
  EXPECT_EQ(c.worst_index, 4u);
}

TEST(Compare, ARowThatAttendsNothingMustBeExactlyZero) {
  const Results ref{{1, -1, 0, 0}, {0, -kInf}};
  Results out = ref;
  out.o[3] = 1e-300;
  const Comparison c = compare(out, ref, Tolerance{1e-6, 1e-6, 1, 1e-6});
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.failed_elements, 1u);
}

// The bound ratios say how far from failing the worst element is: its error over its own bound.
TEST(Compare, BoundRatiosAreTheWorstErrorOverItsOwnBound) {
  Results out = kRef;
  out.o[2] = -3 * (1 + 2e-6);  // twice its bound, 1e-6 * 3
  out.lse[1] = -500 + 2.5e-4;  // half its bound, 1e-6 * 500
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_NEAR(c.o_bound_ratio, 2, 1e-9);
  EXPECT_NEAR(c.lse_bound_ratio, 0.5, 1e-9);
  EXPECT_FALSE(c.pass);
}

TEST(Compare, BoundRatiosAreZeroWhenExactAndInfiniteForNan) {
  const Comparison exact = compare(kRef, kRef, kTol);
  EXPECT_EQ(exact.o_bound_ratio, 0);
  EXPECT_EQ(exact.lse_bound_ratio, 0);
  Results out = kRef;
  out.o[0] = kNaN;
  out.lse[0] = kNaN;
  const Comparison nan = compare(out, kRef, kTol);
  EXPECT_EQ(nan.o_bound_ratio, kInf);
  EXPECT_EQ(nan.lse_bound_ratio, kInf);
}

TEST(Compare, TheORatioCountsTheRelativeL2Error) {
  Results out = kRef;
  out.o[3] = 6;  // within rtol 1 (ratio 0.5), but ||o - r|| / ||r|| = 2 / sqrt(30) is 3.65 times l2 0.1
  const Comparison c = compare(out, kRef, Tolerance{1, 0, 0.1, 1});
  EXPECT_NEAR(c.o_bound_ratio, 2 / std::sqrt(30.0) / 0.1, 1e-12);
  EXPECT_FALSE(c.pass);
}

TEST(Compare, OValuesThatAreNotWholeRowsAreRefused) {
  const Results ref{{1, 2, 3}, {0, 0}};
  EXPECT_THROW(compare(ref, ref, kTol), std::invalid_argument);
}

// compare_rows: O's rule over rows of any length, each element's atol scaled by its own row's rms.
TEST(CompareRows, ScalesAtolByEachRowsRms) {
  // Rows of rms 3.54 and 35.4: an error of 0.5 fails the first's bound (0.354), one of 3 passes the second's (3.54).
  const std::vector<double> ref = {3, 4, 30, 40}, out = {3.5, 4, 33, 40};
  const Comparison c = compare_rows(out, ref, 2, Tolerance{0, 0.1, 1, 0});
  EXPECT_EQ(c.failed_elements, 1U);
  EXPECT_EQ(c.worst_index, 0U);
  EXPECT_FALSE(c.pass);
  EXPECT_TRUE(compare_rows({3, 4, 33, 40}, ref, 2, Tolerance{0, 0.1, 1, 0}).pass);
}

TEST(CompareRows, RefusesSizesThatDifferOrAreNotWholeRows) {
  EXPECT_THAT([] { compare_rows({1, 2}, {1, 2, 3}, 1, kTol); }, ThrowsMessage<std::invalid_argument>(HasSubstr("3")));
  EXPECT_THAT([] { compare_rows({1, 2, 3}, {1, 2, 3}, 2, kTol); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("not whole rows of 2")));
  EXPECT_THROW(compare_rows({}, {}, 0, kTol), std::invalid_argument);
}

TEST(Compare, WrongLseFails) {
  Results out = kRef;
  out.lse[1] = -500 + 1e-3;  // bound: 1e-6 * 500
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.lse_failed, 1u);
  EXPECT_EQ(c.lse_worst_index, 1u);
  EXPECT_NEAR(c.lse_max_abs_error, 1e-3, 1e-12);
}

TEST(Compare, LseToleranceScalesWithMaxOfOneAndTheMagnitude) {
  Results out = kRef;
  out.lse[1] = -500 + 4e-4;  // within 1e-6 * 500
  out.lse[0] = 2 + 1.5e-6;   // within 1e-6 * 2
  EXPECT_TRUE(compare(out, kRef, kTol).pass);
  out.lse[0] = 2 + 3e-6;
  EXPECT_FALSE(compare(out, kRef, kTol).pass);
  const Results small{{1}, {0.25}};
  Results small_out = small;
  small_out.lse[0] = 0.25 + 0.9e-6;  // |r| < 1: the bound is lse_tol itself
  EXPECT_TRUE(compare(small_out, small, kTol).pass);
}

TEST(Compare, TheMergeBoundAddsTheUnitRoundoffOfTheOutputDtype) {
  const Tolerance strict = tolerance_for(DType::bf16, 0);
  const Tolerance merge = with_merge_lse_bound(strict, DType::bf16);
  EXPECT_EQ(strict.lse_bound, LseBound::strict);
  EXPECT_EQ(strict.lse_abs, 0);
  EXPECT_EQ(merge.lse_bound, LseBound::merge);
  EXPECT_EQ(merge.lse_abs, std::ldexp(1.0, -8));
  EXPECT_EQ(merge.lse_tol, strict.lse_tol);
  EXPECT_EQ(merge.rtol, strict.rtol);  // O is judged alike
  Results out = kRef;
  out.lse[1] = -500 + 500 * 1e-5 + 3e-3;  // within lse_abs + lse_tol * |r|
  EXPECT_FALSE(compare(out, kRef, strict).pass);
  EXPECT_TRUE(compare(out, kRef, merge).pass);
  EXPECT_EQ(lse_tolerance_text(strict), "1.00e-05 strict");
  EXPECT_EQ(lse_tolerance_text(merge), "3.91e-03+1.00e-05 merge");
}

TEST(Compare, BothLsesMinusInfinityAgree) {
  const Results ref{{0, 0}, {-kInf}};
  const Comparison c = compare(ref, ref, kTol);
  EXPECT_TRUE(c.pass) << c.summary();
  EXPECT_EQ(c.lse_max_abs_error, 0);
}

TEST(Compare, MinusInfinityAgainstAnythingElseFails) {
  const Results ref{{1}, {-kInf}};
  for (double lse : {0.0, -1e300, kInf, kNaN}) {
    Results out = ref;
    out.lse[0] = lse;
    EXPECT_FALSE(compare(out, ref, kTol).pass) << lse;
    EXPECT_FALSE(compare(ref, out, kTol).pass) << lse;  // and the other way round
  }
}

TEST(Compare, NanLseFails) {
  Results out = kRef;
  out.lse[0] = kNaN;
  const Comparison c = compare(out, kRef, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.lse_failed, 1u);
  EXPECT_EQ(c.lse_worst_index, 0u);
}

TEST(Compare, ResultsOfDifferentSizesThrow) {
  Results out = kRef;
  out.o.pop_back();
  EXPECT_THROW(compare(out, kRef, kTol), std::invalid_argument);
  out = kRef;
  out.lse.push_back(0);
  EXPECT_THROW(compare(out, kRef, kTol), std::invalid_argument);
}

// ---- outputs computed elsewhere (hydragen-diff --npy-dir, the Python package) --------------------

TEST(CompareOutside, AnEmptyLseIsNotCompared) {
  Results out{kRef.o, {}};
  const Comparison c = compare_outside(out, kRef, DType::fp32, 0);
  EXPECT_TRUE(c.pass) << c.summary();
  EXPECT_EQ(c.lse_max_abs_error, 0);
  out.o[0] = 1.5;
  EXPECT_FALSE(compare_outside(out, kRef, DType::fp32, 0).pass);
}

TEST(CompareOutside, JudgesLseByTheMergeBoundUnlessAskedForTheStrictOne) {
  Results out = kRef;
  out.lse[1] = -500 + 500 * 1e-5 + 3e-3;  // within bf16's unit roundoff plus lse_tol * |r|
  const Comparison merge = compare_outside(out, kRef, DType::bf16, 0);
  EXPECT_TRUE(merge.pass) << merge.summary();
  EXPECT_EQ(merge.tolerance.lse_bound, LseBound::merge);
  EXPECT_EQ(merge.tolerance.rtol, tolerance_for(DType::bf16, 0).rtol);
  EXPECT_FALSE(compare_outside(out, kRef, DType::bf16, 0, LseBound::strict).pass);
}

TEST(OutsideSummary, IsTheProblemTheOutputsThenTheComparisonText) {
  const AttentionShape shape = make_shape(1, 1, 2, 1, 2, DType::fp16);
  const Comparison c = compare_outside(kRef, kRef, DType::fp16, 0);
  const std::string text = comparison_text(shape, c);
  EXPECT_THAT(text, HasSubstr("max_abs_err=0.000e+00 rel_l2_err=0.000e+00 lse_err=0.000e+00 tol=(rtol 9.77e-04"));
  EXPECT_THAT(text, HasSubstr("lse 4.88e-04+1.00e-05 merge) o_failed=0/4 lse_failed=0/2 worst_o=[b=0, t=0, h=0, d=0]"));
  EXPECT_TRUE(text.size() > 5 && text.substr(text.size() - 5) == " PASS") << text;
  EXPECT_EQ(outside_summary(shape, "2 segments", DType::fp32, false, c),
            shape.describe() + " tree=(2 segments) o=fp32 lse=absent " + text);
  EXPECT_THAT(outside_summary(shape, "t", DType::bf16, true, c), HasSubstr(" o=bf16 lse=given max_abs_err="));
}

// ---- tolerances -----------------------------------------------------------------------------------

TEST(ToleranceFor, MatchesTheDocumentedNumbers) {
  const Tolerance f64 = tolerance_for(DType::fp64, 0), f32 = tolerance_for(DType::fp32, 0);
  const Tolerance f16 = tolerance_for(DType::fp16, 0), b16 = tolerance_for(DType::bf16, 0);
  EXPECT_EQ(f64.rtol, 1e-12);
  EXPECT_EQ(f64.atol, 1e-12);
  EXPECT_EQ(f64.lse_tol, 1e-12);
  EXPECT_EQ(f32.rtol, 1e-5);
  EXPECT_EQ(f32.lse_tol, 1e-5);
  EXPECT_EQ(f64.l2, 1e-12);
  EXPECT_EQ(f32.l2, 1e-5);
  EXPECT_EQ(f16.rtol, 2 * std::ldexp(1.0, -11));  // twice the rounding of the exact result
  EXPECT_EQ(f16.atol, 4 * std::ldexp(1.0, -11));  // probabilities rounded to the dtype before P V
  EXPECT_EQ(f16.l2, 2 * std::ldexp(1.0, -11));
  EXPECT_EQ(f16.lse_tol, 1e-5);                    // LSE is fp32 whatever the storage
  EXPECT_EQ(b16.rtol, 2 * std::ldexp(1.0, -8));
  EXPECT_EQ(b16.atol, 4 * std::ldexp(1.0, -8));
  EXPECT_EQ(b16.l2, 2 * std::ldexp(1.0, -8));
}

TEST(ToleranceFor, GrowsWithTheLogitBoundByTheScoreRounding) {
  const double bound = 1e4;
  const double cond64 = 4 * std::ldexp(1.0, -53) * bound, cond32 = 4 * std::ldexp(1.0, -24) * bound;
  EXPECT_DOUBLE_EQ(tolerance_for(DType::fp64, bound).rtol, 1e-12 + cond64);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::fp64, bound).lse_tol, 1e-12 + cond64);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::fp32, bound).atol, 1e-5 + cond32);
  EXPECT_DOUBLE_EQ(tolerance_for(DType::bf16, bound).rtol, 2 * std::ldexp(1.0, -8) + cond32);  // fp32 arithmetic
}

// ---- index names ----------------------------------------------------------------------------------

TEST(IndexName, NamesTheCoordinatesOfAFlatIndex) {
  const AttentionShape shape = make_shape(2, 3, 4, 2, 5, DType::fp32);
  // O is [B=2, q_len=3, Hq=4, D=5]: [1, 2, 3, 4] is ((1*3 + 2)*4 + 3)*5 + 4 = 119.
  EXPECT_EQ(index_name(shape, 119, false), "[b=1, t=2, h=3, d=4]");
  EXPECT_EQ(index_name(shape, 0, false), "[b=0, t=0, h=0, d=0]");
  // LSE is [B, q_len, Hq]: [1, 2, 3] is (1*3 + 2)*4 + 3 = 23.
  EXPECT_EQ(index_name(shape, 23, true), "[b=1, t=2, h=3]");
  EXPECT_EQ(index_name(shape, 5, true), "[b=0, t=1, h=1]");
}

}  // namespace
}  // namespace hydragen
