// The fp64 `reference` is the definition everything else is compared with, so it is itself checked
// against an independent implementation: plain loops in long double straight from DESIGN.md section 2
// (layouts, GQA head groups, causal leaf), and against small cases worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

// softmax(scale * q K^T) V for every (sequence, query, head) over the keys it attends: every token on
// its path except the last q_len-1-t of its leaf. Query head h reads KV head h / g.
Results naive_attention(const Problem& p) {
  const AttentionShape& s = p.shape;
  const int d = s.head_dim, g = s.group_size();
  Results r{std::vector<double>(p.q.size()), std::vector<double>(p.q.size() / d)};
  for (int b = 0; b < s.num_seqs; ++b) {
    std::vector<const double*> keys, values;  // rows of this sequence's path, for KV head 0
    for (int seg : p.tree.path(b)) {
      for (int tok = 0; tok < p.tree.length(seg); ++tok) {
        keys.push_back(&p.k[seg][static_cast<std::size_t>(tok) * s.kv_heads * d]);
        values.push_back(&p.v[seg][static_cast<std::size_t>(tok) * s.kv_heads * d]);
      }
    }
    for (int t = 0; t < s.q_len; ++t) {
      const auto attended = static_cast<std::size_t>(static_cast<long long>(keys.size()) - (s.q_len - 1 - t));
      for (int h = 0; h < s.q_heads; ++h) {
        const std::size_t row = (static_cast<std::size_t>(b) * s.q_len + t) * s.q_heads + h;
        const double* q = &p.q[row * d];
        const int kvh = h / g;
        std::vector<long double> score(attended);
        long double m = -std::numeric_limits<long double>::infinity();
        for (std::size_t j = 0; j < attended; ++j) {
          long double dot = 0;
          for (int i = 0; i < d; ++i) dot += static_cast<long double>(q[i]) * keys[j][kvh * d + i];
          score[j] = s.scale * dot;
          m = std::max(m, score[j]);
        }
        long double sum = 0;
        std::vector<long double> o(d, 0);
        for (std::size_t j = 0; j < attended; ++j) {
          const long double w = std::exp(score[j] - m);
          sum += w;
          for (int i = 0; i < d; ++i) o[i] += w * values[j][kvh * d + i];
        }
        for (int i = 0; i < d; ++i) r.o[row * d + i] = attended == 0 ? 0.0 : static_cast<double>(o[i] / sum);
        r.lse[row] = attended == 0 ? -std::numeric_limits<double>::infinity() : static_cast<double>(m + std::log(sum));
      }
    }
  }
  return r;
}

struct Small {
  std::string what;
  AttentionShape shape;
  SharingTree tree;
  double q_scale = 1.0;
};

std::vector<Small> small_problems() {
  using T = SharingTree;
  return {
      {"MHA, ragged suffixes", make_shape(3, 1, 2, 2, 8, DType::fp64), T::prefix_suffix(6, {0, 3, 1})},
      {"GQA g=4", make_shape(2, 1, 8, 2, 16, DType::fp64), T::prefix_suffix(5, {2, 7})},
      {"MQA", make_shape(2, 1, 4, 1, 8, DType::fp64), T::prefix_suffix(1, {4, 0})},
      {"causal q_len=3", make_shape(2, 3, 4, 2, 8, DType::fp64), T::prefix_suffix(4, {2, 6})},
      {"causal, no prefix: first query attends nothing", make_shape(1, 3, 2, 1, 8, DType::fp64), T::flat({2})},
      {"depth 3, empty middle, out-of-order segments", make_shape(3, 2, 4, 2, 8, DType::fp64),
       T::from_parents({3, 2, 3, -1, 2}, {1, 4, 0, 7, 3}, {0, 1, 4})},
      {"empty path", make_shape(2, 1, 2, 1, 4, DType::fp64), T::from_parents({-1, 0, -1}, {0, 0, 3}, {1, 2})},
      {"logits near 1e4", make_shape(2, 2, 4, 1, 16, DType::fp64), T::prefix_suffix(9, {3, 5}), 1e4},
  };
}

TEST(Reference, BothReferencesMatchPlainSoftmaxLoops) {
  std::uint64_t seed = 40;
  for (const Small& c : small_problems()) {
    const Problem p = make_problem(c.shape, c.tree, ++seed, c.q_scale);
    const Results expected = naive_attention(p);
    for (const char* name : {"reference", "reference-decomposed"}) {
      const Comparison cmp = compare(run_backend(backend(name), p), expected, tolerance_for(DType::fp64, logit_bound(p)));
      EXPECT_TRUE(cmp.pass) << name << " on " << c.what << ": " << cmp.summary() << " worst "
                            << index_name(c.shape, cmp.worst_index, false);
    }
  }
}

// Hand-built problem with D=2, one head, scale 0.5. Returns O and LSE of the single sequence.
Results run_by_hand(const char* name, std::vector<double> q, std::vector<double> k, std::vector<double> v) {
  AttentionShape shape = make_shape(1, 1, 1, 1, 2, DType::fp64);
  shape.scale = 0.5f;
  const int tokens = static_cast<int>(k.size() / 2);
  const Problem p{shape, SharingTree::prefix_suffix(1, {tokens - 1}), std::move(q),
                  {{k.begin(), k.begin() + 2}, {k.begin() + 2, k.end()}},
                  {{v.begin(), v.begin() + 2}, {v.begin() + 2, v.end()}}};
  return run_backend(backend(name), p);
}

TEST(Reference, EqualScoresAverageTheValues) {
  for (const char* name : {"reference", "reference-decomposed"}) {
    // q = (1, 0); keys (2, 5) and (2, -7) both score 0.5 * 2 = 1: weights 1/2, 1/2, LSE = 1 + log 2.
    const Results r = run_by_hand(name, {1, 0}, {2, 5, 2, -7}, {1, 2, 3, 4});
    EXPECT_NEAR(r.o[0], 2.0, 1e-15) << name;
    EXPECT_NEAR(r.o[1], 3.0, 1e-15) << name;
    EXPECT_NEAR(r.lse[0], 1.0 + std::log(2.0), 1e-15) << name;
  }
}

TEST(Reference, ScoresOneApartWeighByE) {
  for (const char* name : {"reference", "reference-decomposed"}) {
    // q = (0, 2): the prefix key (3, 0) scores 0, the leaf key (9, 1) scores 0.5 * 2 = 1: weights 1/(1+e), e/(1+e).
    const Results r = run_by_hand(name, {0, 2}, {3, 0, 9, 1}, {10, 0, 0, 10});
    const double e = std::exp(1.0);
    EXPECT_NEAR(r.o[0], 10 / (1 + e), 1e-14) << name;
    EXPECT_NEAR(r.o[1], 10 * e / (1 + e), 1e-14) << name;
    EXPECT_NEAR(r.lse[0], std::log(1 + e), 1e-15) << name;
  }
}

}  // namespace
}  // namespace hydragen
