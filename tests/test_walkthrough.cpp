// hydragen-walkthrough: the printed numbers checked against values computed here, independently
// (a direct fp64 softmax from the same seed; core's estimate_cost for the batched view).
// The suite is named in lower case so that `ctest -R walkthrough` selects it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hydragen/cost_model.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "walkthrough/walkthrough.hpp"

namespace {

using hydragen::walkthrough::WalkthroughOptions;

std::string run(const WalkthroughOptions& options) {
  std::ostringstream out;
  hydragen::walkthrough::walkthrough(options, out);
  return out.str();
}

// The numbers after the last "= " of the first line (at or after `from`) whose text starts with
// `label`: one number, or a bracketed list. strtod reads inf, -inf and nan.
std::vector<double> numbers(const std::string& text, const std::string& label, const std::string& from = "") {
  std::size_t pos = from.empty() ? 0 : text.find(from);
  EXPECT_NE(pos, std::string::npos) << "no '" << from << "' in the output";
  if (pos == std::string::npos) return {};
  std::istringstream lines(text.substr(pos));
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, label.size(), label) != 0) continue;
    const std::size_t eq = line.rfind("= ");
    std::string rest = line.substr(eq + 2);
    rest.erase(std::remove(rest.begin(), rest.end(), '['), rest.end());
    rest.erase(std::remove(rest.begin(), rest.end(), ']'), rest.end());
    std::vector<double> values;
    const char* p = rest.c_str();
    char* end = nullptr;
    for (double v = std::strtod(p, &end); end != p; v = std::strtod(p, &end)) {
      values.push_back(v);
      p = end;
    }
    return values;
  }
  ADD_FAILURE() << "no line starting with '" << label << "' in the output";
  return {};
}

double number(const std::string& text, const std::string& label, const std::string& from = "") {
  const std::vector<double> v = numbers(text, label, from);
  EXPECT_EQ(v.size(), 1u) << label;
  return v.empty() ? std::nan("") : v[0];
}

// The expected attention output computed here: q, K, V from the same seed and order, softmax of
// factor * q.k / sqrt(D) with the max subtracted, times V.
struct Expected {
  std::vector<double> o;
  double lse = 0;
};
Expected expected(std::uint64_t seed, int keys, int dim, double factor) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(dim), k(static_cast<std::size_t>(keys) * dim), v(k.size());
  for (double& x : q) x = normal(rng);
  for (double& x : k) x = normal(rng);
  for (double& x : v) x = normal(rng);
  std::vector<double> s(keys);
  for (int j = 0; j < keys; ++j) {
    double dot = 0;
    for (int d = 0; d < dim; ++d) dot += q[d] * k[j * dim + d];
    s[j] = factor * dot / std::sqrt(static_cast<double>(dim));
  }
  const double m = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += std::exp(x - m);
  Expected e;
  e.o.assign(dim, 0.0);
  for (int j = 0; j < keys; ++j)
    for (int d = 0; d < dim; ++d) e.o[d] += std::exp(s[j] - m) / sum * v[j * dim + d];
  e.lse = m + std::log(sum);
  return e;
}

// Printed with %.6f: within half a unit of the sixth decimal.
constexpr double kPrinted = 5.1e-7;

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

TEST(walkthrough, SoftmaxOutputMatchesDirectComputation) {
  const WalkthroughOptions o;
  const std::string text = run(o);
  const Expected e = expected(o.seed, o.keys, o.head_dim, 1.0);
  expect_near(numbers(text, "o_full"), e.o, kPrinted, "o_full");
  EXPECT_NEAR(number(text, "lse_full"), e.lse, kPrinted);
  expect_near(numbers(text, "o_merged"), e.o, kPrinted, "o_merged");
}

TEST(walkthrough, MergedEqualsFull) {
  const std::string text = run({});
  EXPECT_LT(number(text, "max|o_merged - o_full|"), 1e-14);
  EXPECT_LT(number(text, "|lse_merged - lse_full|"), 1e-14);
}

TEST(walkthrough, LargeLogitsNaiveBreaksStableStaysExact) {
  const WalkthroughOptions o;
  const std::string text = run(o);
  // 6a and 6b shift every score by +-1000 (the softmax is unchanged); 6c multiplies them by 1000.
  const Expected shifted = expected(o.seed, o.keys, o.head_dim, 1.0);
  const Expected scaled = expected(o.seed, o.keys, o.head_dim, 1000.0);
  const struct {
    const char* step;
    const Expected* want;
    double lse;
  } cases[] = {{"Step 6a.", &shifted, shifted.lse + 1000}, {"Step 6b.", &shifted, shifted.lse - 1000},
               {"Step 6c.", &scaled, scaled.lse}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.step);
    const std::vector<double> merged = numbers(text, "stable o_merged", c.step);
    for (double x : merged) EXPECT_TRUE(std::isfinite(x));
    expect_near(merged, c.want->o, kPrinted, "stable o_merged");
    expect_near(numbers(text, "stable o_full", c.step), c.want->o, kPrinted, "stable o_full");
    EXPECT_NEAR(number(text, "stable lse_merged", c.step), c.lse, 1e-6);
    // An LSE near +-1000 is only known to ulp(1000) = 1.1e-13, and the merge weights inherit it.
    EXPECT_LT(number(text, "stable max|o_merged - o_full|", c.step), c.lse > 500 || c.lse < -500 ? 1e-12 : 1e-14);
  }
  // Near +1000 every exp() overflows: inf / inf = nan.
  const std::vector<double> up_e = numbers(text, "naive exp(s)", "Step 6a.");
  ASSERT_FALSE(up_e.empty());
  for (double x : up_e) EXPECT_TRUE(std::isinf(x)) << x;
  EXPECT_TRUE(std::isinf(number(text, "naive sum", "Step 6a.")));
  for (double x : numbers(text, "naive o", "Step 6a.")) EXPECT_TRUE(std::isnan(x)) << x;
  // Near -1000 every exp() underflows: 0 / 0 = nan.
  EXPECT_EQ(number(text, "naive sum", "Step 6b."), 0.0);
  for (double x : numbers(text, "naive o", "Step 6b.")) EXPECT_TRUE(std::isnan(x)) << x;
}

TEST(walkthrough, BatchedViewPrintsTheCostModel) {
  const WalkthroughOptions o;
  const std::string text = run(o);
  const hydragen::AttentionShape shape = hydragen::make_shape(64, 1, 8, 1, 128, hydragen::DType::bf16);
  const hydragen::CostEstimate c =
      hydragen::estimate_cost(shape, hydragen::SharingTree::prefix_suffix(4096, std::vector<int>(64, 64)));
  EXPECT_EQ(number(text, "FLOPs"), c.flops);
  EXPECT_EQ(number(text, "flat bytes"), c.flat_bytes);
  EXPECT_EQ(number(text, "hydragen bytes"), c.decomposed_bytes);
  EXPECT_NEAR(number(text, "flat intensity"), c.flops / c.flat_bytes, 5e-4);
  EXPECT_NEAR(number(text, "hydragen intensity"), c.flops / c.decomposed_bytes, 5e-4);
  EXPECT_LT(c.decomposed_bytes, c.flat_bytes);
}

TEST(walkthrough, RelayFormEqualsMerge) {
  const std::string text = run({});
  expect_near(numbers(text, "o_relay"), numbers(text, "o_merged"), 1e-12, "o_relay");
  EXPECT_LT(number(text, "max|o_relay - o_merged|"), 1e-14);
  const double alpha = number(text, "alpha");
  EXPECT_NEAR(alpha, number(text, "w1"), kPrinted);
  EXPECT_GT(alpha, 0.0);
  EXPECT_LT(alpha, 1.0);
}

TEST(walkthrough, EmptyChunkIsTheIdentity) {
  for (int split : {0, 6}) {
    SCOPED_TRACE("split " + std::to_string(split));
    WalkthroughOptions o;
    o.split = split;
    const std::string text = run(o);
    const std::string empty = split == 0 ? "chunk 1:" : "chunk 2:";
    const std::string other = split == 0 ? "chunk 2:" : "chunk 1:";
    EXPECT_NE(text.find(empty + " keys [" + std::to_string(split) + ", " + std::to_string(split) + ") (empty)"),
              std::string::npos);
    const double lse_empty = number(text, "lse    =", "  " + empty);
    EXPECT_TRUE(std::isinf(lse_empty) && lse_empty < 0) << lse_empty;
    expect_near(numbers(text, "o      =", "  " + empty), {0, 0, 0, 0}, 0, "empty o");
    EXPECT_EQ(number(text, split == 0 ? "w1" : "w2"), 0.0);
    EXPECT_EQ(number(text, split == 0 ? "w2" : "w1"), 1.0);
    // The merge is the identity: the non-empty chunk's output is the full output.
    const Expected e = expected(o.seed, o.keys, o.head_dim, 1.0);
    expect_near(numbers(text, "o      =", "  " + other), e.o, kPrinted, "chunk o");
    expect_near(numbers(text, "o_merged"), e.o, kPrinted, "o_merged");
    EXPECT_LT(number(text, "max|o_merged - o_full|"), 1e-14);
    EXPECT_LT(number(text, "max|o_relay - o_merged|"), 1e-14);
    for (const char* step : {"Step 6a.", "Step 6b.", "Step 6c."}) {
      const std::vector<double> big = numbers(text, "stable o_merged", step);
      EXPECT_EQ(big.size(), 4u);
      for (double x : big) EXPECT_TRUE(std::isfinite(x)) << step;
    }
  }
}

TEST(walkthrough, BadFlagsExitTwoWithOneLine) {
  const std::vector<std::vector<const char*>> cases = {
      {"hydragen-walkthrough", "--split", "7"},
      {"hydragen-walkthrough", "--keys", "0"},
      {"hydragen-walkthrough", "--split", "-1"},
      {"hydragen-walkthrough", "--no-such-flag"},
  };
  for (const auto& argv : cases) {
    std::ostringstream out, err;
    const int rc = hydragen::walkthrough::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
    EXPECT_EQ(rc, 2) << argv[1];
    const std::string e = err.str();
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
    EXPECT_TRUE(out.str().empty());
  }
  std::ostringstream out, err;
  const char* ok[] = {"hydragen-walkthrough", "--seed", "3", "--keys", "9", "--split", "4", "--scale-logits", "2"};
  EXPECT_EQ(hydragen::walkthrough::run_cli(9, ok, out, err), 0) << err.str();
  EXPECT_LT(number(out.str(), "max|o_merged - o_full|"), 1e-14);
}

}  // namespace
