// merge.hpp: the one LSE merge. Partials over disjoint key sets combine into the partial over their
// union; the merge is commutative, associative, has the empty set (o = 0, lse = -inf) as identity,
// and never overflows; its many-partial form (merge_scale, merged_lse) gives the same union. Every
// property is checked in double and in float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "hydragen/merge.hpp"

namespace hydragen {
namespace {

template <typename T>
struct Partial {
  std::vector<T> o;  // softmax-weighted mean of the values
  T lse;
};

constexpr int kDim = 8;  // value width

// Expected values are computed in long double and compared in double (what EXPECT_NEAR takes).
double dbl(long double x) { return static_cast<double>(x); }

// Attention of one query over keys [lo, hi): the softmax of their scores applied to their values, in T.
template <typename T>
Partial<T> attend(const std::vector<T>& scores, const std::vector<T>& values, std::size_t lo, std::size_t hi) {
  Partial<T> p{std::vector<T>(kDim, T(0)), -std::numeric_limits<T>::infinity()};
  if (lo == hi) return p;  // empty key set
  const T m = *std::max_element(scores.begin() + static_cast<std::ptrdiff_t>(lo),
                                scores.begin() + static_cast<std::ptrdiff_t>(hi));
  T sum = 0;
  for (std::size_t j = lo; j < hi; ++j) {
    const T w = std::exp(scores[j] - m);
    sum += w;
    for (int i = 0; i < kDim; ++i) p.o[i] += w * values[j * kDim + i];
  }
  for (T& x : p.o) x /= sum;
  p.lse = m + std::log(sum);
  return p;
}

// The same over all keys, in long double: what any order of merges must reproduce.
template <typename T>
Partial<long double> softmax_exact(const std::vector<T>& scores, const std::vector<T>& values) {
  const long double m = *std::max_element(scores.begin(), scores.end());
  long double sum = 0;
  std::vector<long double> o(kDim, 0);
  for (std::size_t j = 0; j < scores.size(); ++j) {
    const long double w = std::exp(static_cast<long double>(scores[j]) - m);
    sum += w;
    for (int i = 0; i < kDim; ++i) o[i] += w * values[j * kDim + i];
  }
  for (long double& x : o) x /= sum;
  return {o, m + std::log(sum)};
}

template <typename T>
Partial<T> merged(Partial<T> a, const Partial<T>& b) {
  merge_into(a.o.data(), a.lse, b.o.data(), b.lse, kDim);
  return a;
}

template <typename T>
struct Draw {
  std::vector<T> scores, values;
};

template <typename T>
Draw<T> draw(std::mt19937_64& rng, std::size_t n, double score_spread) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Draw<T> d;
  for (std::size_t j = 0; j < n; ++j) d.scores.push_back(static_cast<T>(score_spread * normal(rng)));
  for (std::size_t j = 0; j < n * kDim; ++j) d.values.push_back(static_cast<T>(normal(rng)));
  return d;
}

template <typename T>
class Merge : public ::testing::Test {
 protected:
  static constexpr T eps = std::numeric_limits<T>::epsilon();
  static constexpr T inf = std::numeric_limits<T>::infinity();
};
using FloatTypes = ::testing::Types<double, float>;
struct FloatTypeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, double> ? "double" : "float";
  }
};
TYPED_TEST_SUITE(Merge, FloatTypes, FloatTypeNames);

// RelayAttention's form of the same weights: w_a = sigmoid(lse_a - lse_b), lse = log(e^lse_a + e^lse_b).
TYPED_TEST(Merge, WeightsAreTheSoftmaxOfTheTwoLses) {
  using T = TypeParam;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> lse(-40.0, 40.0);
  for (int i = 0; i < 1000; ++i) {
    const T a = static_cast<T>(lse(rng)), b = static_cast<T>(lse(rng));
    const MergeWeights<T> w = merge_weights(a, b);
    const long double wa = 1.0L / (1.0L + std::exp(static_cast<long double>(b) - a));
    const long double ref_lse = std::log(std::exp(static_cast<long double>(a)) + std::exp(static_cast<long double>(b)));
    EXPECT_NEAR(w.a, dbl(wa), 4 * this->eps) << a << " " << b;
    EXPECT_NEAR(w.b, dbl(1.0L - wa), 4 * this->eps) << a << " " << b;
    EXPECT_NEAR(w.lse, dbl(ref_lse), 4 * this->eps * std::max(1.0, dbl(std::fabs(ref_lse)))) << a << " " << b;
  }
}

TYPED_TEST(Merge, IsCommutative) {
  using T = TypeParam;
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    const Draw<T> d = draw<T>(rng, 20, 3.0);
    const Partial<T> a = attend(d.scores, d.values, 0, 7), b = attend(d.scores, d.values, 7, 20);
    const Partial<T> ab = merged(a, b), ba = merged(b, a);
    EXPECT_NEAR(ab.lse, ba.lse, 2 * this->eps * std::max(T(1), std::fabs(ab.lse)));
    for (int i = 0; i < kDim; ++i) EXPECT_NEAR(ab.o[i], ba.o[i], 2 * this->eps) << "element " << i;
    const MergeWeights<T> w = merge_weights(a.lse, b.lse), v = merge_weights(b.lse, a.lse);
    EXPECT_EQ(w.a, v.b);
    EXPECT_EQ(w.b, v.a);
  }
}

// Three partials over consecutive key ranges, merged (a+b)+c and a+(b+c): the same up to rounding.
TYPED_TEST(Merge, IsAssociative) {
  using T = TypeParam;
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const Draw<T> d = draw<T>(rng, 30, trial % 2 ? 10.0 : 1.0);
    const Partial<T> a = attend(d.scores, d.values, 0, 4), b = attend(d.scores, d.values, 4, 19),
                     c = attend(d.scores, d.values, 19, 30);
    const Partial<T> left = merged(merged(a, b), c), right = merged(a, merged(b, c));
    EXPECT_NEAR(left.lse, right.lse, 4 * this->eps * std::max(T(1), std::fabs(left.lse))) << "trial " << trial;
    for (int i = 0; i < kDim; ++i) EXPECT_NEAR(left.o[i], right.o[i], 8 * this->eps) << "trial " << trial << " element " << i;
  }
}

TYPED_TEST(Merge, EmptyPartialIsTheIdentityOnEitherSide) {
  using T = TypeParam;
  std::mt19937_64 rng(4);
  const Draw<T> d = draw<T>(rng, 10, 2.0);
  const Partial<T> p = attend(d.scores, d.values, 0, 10);
  const Partial<T> empty{std::vector<T>(kDim, T(0)), -this->inf};
  for (const Partial<T>& m : {merged(p, empty), merged(empty, p)}) {
    EXPECT_EQ(m.lse, p.lse);
    EXPECT_EQ(m.o, p.o);
  }
  const MergeWeights<T> w = merge_weights(p.lse, -this->inf);
  EXPECT_EQ(w.a, T(1));
  EXPECT_EQ(w.b, T(0));
}

TYPED_TEST(Merge, TwoEmptyPartialsGiveAnEmptyPartial) {
  using T = TypeParam;
  const MergeWeights<T> w = merge_weights(-this->inf, -this->inf);
  EXPECT_EQ(w.lse, -this->inf);
  EXPECT_EQ(w.a, T(0));
  EXPECT_EQ(w.b, T(0));
  const Partial<T> empty{std::vector<T>(kDim, T(0)), -this->inf};
  const Partial<T> m = merged(empty, empty);
  EXPECT_EQ(m.lse, -this->inf);
  for (T x : m.o) EXPECT_EQ(x, T(0));
}

// The keys of `d` split at fewer than `max_cuts` random places (repeats: empty chunks), each chunk
// attended alone.
template <typename T>
std::vector<Partial<T>> chunks(std::mt19937_64& rng, const Draw<T>& d, std::size_t max_cuts) {
  const std::size_t n = d.scores.size();
  std::vector<std::size_t> cuts = {0, n};
  for (std::size_t c = rng() % max_cuts; c > 0; --c) cuts.push_back(rng() % (n + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<Partial<T>> parts;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) parts.push_back(attend(d.scores, d.values, cuts[c], cuts[c + 1]));
  return parts;
}

// `m` is the softmax over all of `d`'s keys: each chunk's sum of <= 64 terms and the merges cost a few
// ulp each.
template <typename T>
void expect_softmax_over_all(const Partial<T>& m, const Draw<T>& d, int trial) {
  const Partial<long double> exact = softmax_exact(d.scores, d.values);
  const double tol = 64 * static_cast<double>(std::numeric_limits<T>::epsilon());
  EXPECT_NEAR(m.lse, dbl(exact.lse), tol * std::max(1.0, dbl(std::fabs(exact.lse)))) << "trial " << trial;
  for (int i = 0; i < kDim; ++i) EXPECT_NEAR(m.o[i], dbl(exact.o[i]), tol) << "trial " << trial << " element " << i;
}

// The defining property: split the keys anywhere (empty chunks included), attend to each chunk,
// merge left to right starting from the empty partial: the softmax over all keys.
TYPED_TEST(Merge, MergingChunksEqualsTheSoftmaxOverTheirUnion) {
  using T = TypeParam;
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 64;
    const Draw<T> d = draw<T>(rng, n, trial % 3 == 0 ? 20.0 : 1.0);
    Partial<T> acc{std::vector<T>(kDim, T(0)), -this->inf};
    for (const Partial<T>& part : chunks(rng, d, 6)) acc = merged(acc, part);
    expect_softmax_over_all(acc, d, trial);
  }
}

// The many-partial form, as the CUDA merge kernel runs it: the partials in rounds of `round`, each
// round's weights e^(lse - max) against the running max, the outputs and the weights' sum so far
// rescaled by e^(old max - new max) (merge_scale) when a round raises it; normalized once at the end.
template <typename T>
Partial<T> merged_many(const std::vector<Partial<T>>& parts, std::size_t round) {
  std::vector<T> acc(kDim, T(0));
  T max = -std::numeric_limits<T>::infinity(), sum = 0;
  for (std::size_t base = 0; base < parts.size(); base += round) {
    const std::size_t end = std::min(parts.size(), base + round);
    T new_max = max;
    for (std::size_t i = base; i < end; ++i) new_max = std::max(new_max, parts[i].lse);
    const T carry = merge_scale(max, new_max);
    sum *= carry;
    for (T& x : acc) x *= carry;
    for (std::size_t i = base; i < end; ++i) {
      const T scale = merge_scale(parts[i].lse, new_max);
      sum += scale;
      for (int k = 0; k < kDim; ++k) acc[k] += scale * parts[i].o[k];
    }
    max = new_max;
  }
  const T inv = merged_inv(sum);
  for (T& x : acc) x *= inv;
  return {acc, merged_lse(max, sum)};
}

// The same chunks as above, all at once and in rounds of 1, 3 and 32 partials: the softmax over all keys.
TYPED_TEST(Merge, ManyPartialsAtOnceEqualTheSoftmaxOverTheirUnion) {
  using T = TypeParam;
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 64;
    const Draw<T> d = draw<T>(rng, n, trial % 3 == 0 ? 20.0 : 1.0);
    const std::vector<Partial<T>> parts = chunks(rng, d, 12);
    for (const std::size_t round : {std::size_t{1}, std::size_t{3}, std::size_t{32}}) {
      expect_softmax_over_all(merged_many(parts, round), d, trial);
    }
  }
}

TYPED_TEST(Merge, ManyEmptyPartialsGiveAnEmptyPartial) {
  using T = TypeParam;
  EXPECT_EQ(merge_scale(-this->inf, -this->inf), T(0));
  EXPECT_EQ(merged_lse(-this->inf, T(0)), -this->inf);
  EXPECT_EQ(merged_inv(T(0)), T(0));
  const Partial<T> empty{std::vector<T>(kDim, T(0)), -this->inf};
  const Partial<T> m = merged_many<T>({empty, empty, empty}, 2);
  EXPECT_EQ(m.lse, -this->inf);
  for (T x : m.o) EXPECT_EQ(x, T(0));
  // Beside a partial that is not empty, empty ones weigh nothing.
  const Partial<T> p{std::vector<T>(kDim, T(2)), T(-3)};
  const Partial<T> q = merged_many<T>({empty, p, empty}, 2);
  EXPECT_EQ(q.lse, p.lse);
  for (T x : q.o) EXPECT_EQ(x, T(2));
}

TYPED_TEST(Merge, ManyPartialsAroundPlusMinus1e4DoNotOverflow) {
  using T = TypeParam;
  for (const T base : {T(1e4), T(-1e4)}) {
    const Partial<T> a{std::vector<T>(kDim, T(1)), base}, b{std::vector<T>(kDim, T(-1)), base - T(3)};
    const long double t = std::exp(-3.0L);
    for (const std::size_t round : {std::size_t{1}, std::size_t{2}}) {
      const Partial<T> m = merged_many<T>({b, a}, round);  // the larger second: a round raises the max
      for (T x : m.o) EXPECT_NEAR(x, dbl((1 - t) / (1 + t)), 4 * this->eps) << base;
      EXPECT_NEAR(m.lse, dbl(base + std::log1p(t)), 4 * this->eps * 1e4) << base;
    }
  }
}

// e^(1e4) overflows every floating type: the merge must only ever exponentiate differences.
TYPED_TEST(Merge, LsesAroundPlusMinus1e4DoNotOverflow) {
  using T = TypeParam;
  for (const T base : {T(1e4), T(-1e4)}) {
    const T a = base, b = base - T(3);
    const MergeWeights<T> w = merge_weights(a, b);
    const long double t = std::exp(-3.0L);
    EXPECT_NEAR(w.a, dbl(1 / (1 + t)), 4 * this->eps) << base;
    EXPECT_NEAR(w.b, dbl(t / (1 + t)), 4 * this->eps) << base;
    EXPECT_NEAR(w.lse, dbl(base + std::log1p(t)), 4 * this->eps * 1e4) << base;
    Partial<T> pa{std::vector<T>(kDim, T(1)), a};
    const Partial<T> pb{std::vector<T>(kDim, T(-1)), b};
    merge_into(pa.o.data(), pa.lse, pb.o.data(), pb.lse, kDim);
    for (T x : pa.o) EXPECT_NEAR(x, dbl((1 - t) / (1 + t)), 4 * this->eps) << base;
    EXPECT_TRUE(std::isfinite(pa.lse));
  }
}

TYPED_TEST(Merge, HugeLseDifferencesGiveAllWeightToTheLargerSide) {
  using T = TypeParam;
  T big;
  if constexpr (sizeof(T) == 8) {
    big = T(1e300);
  } else {
    big = T(1e38);
  }
  const T max = std::numeric_limits<T>::max();
  for (const auto& [hi, lo] : {std::pair<T, T>{big, -big}, {max, std::numeric_limits<T>::lowest()}, {T(0), -big}}) {
    for (bool swap : {false, true}) {
      const MergeWeights<T> w = swap ? merge_weights(lo, hi) : merge_weights(hi, lo);
      EXPECT_EQ(swap ? w.b : w.a, T(1)) << hi << " vs " << lo;
      EXPECT_EQ(swap ? w.a : w.b, T(0)) << hi << " vs " << lo;
      EXPECT_EQ(w.lse, hi) << hi << " vs " << lo;
    }
  }
  // Equal huge LSEs: half each, and the union's LSE (big + log 2) stays finite.
  const MergeWeights<T> w = merge_weights(max, max);
  EXPECT_EQ(w.a, T(0.5));
  EXPECT_EQ(w.b, T(0.5));
  EXPECT_TRUE(std::isfinite(w.lse));
}

}  // namespace
}  // namespace hydragen
