// The proof that the decomposition is exact (DESIGN.md sections 1 and 5): per-segment attention merged
// with the LSE rule (`reference-decomposed`) equals softmax over the concatenated path (`reference`)
// to 1e-12 relative in fp64, on random forests up to depth 3 with uneven fan-out, ragged and empty
// segments, 1-token prefixes, GQA ratios 1/4/8 and MQA, D 64/128, q_len 1 and 4 (causal leaf), and
// logits near +-1e4. The bound is asserted literally, not through compare()'s tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

constexpr int kProblems = 250;
constexpr double kBound = 1e-12;

// SplitMix64: a fixed, portable stream per problem index (the standard distributions are not portable).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }

 private:
  std::uint64_t state_;
};

struct RandomProblem {
  Problem problem;
  double q_scale;
  std::string text;
};

// A random forest: 1-2 roots (1-4 for flat trees), internal nodes with 1-3 children, leaves at any
// depth up to max_depth. Lengths: shared segments are empty 15% of the time, roots 1 token 20% of the
// time; leaves hold q_len-1 tokens (the causal minimum, 0 when decoding) 25% of the time.
class TreeBuilder {
 public:
  TreeBuilder(Rng& rng, int max_depth, int q_len) : rng_(rng), max_depth_(max_depth), q_len_(q_len) {}

  SharingTree build() {
    const int roots = max_depth_ == 1 ? 1 + rng_.below(4) : 1 + (rng_.chance(25) ? 1 : 0);
    for (int r = 0; r < roots; ++r) grow(-1, 1);
    // Renumber segments randomly (parents may then follow children) and shuffle the sequence order.
    const int n = static_cast<int>(parents_.size());
    std::vector<int> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    shuffle(perm);
    std::vector<int> parents(n), lengths(n);
    for (int i = 0; i < n; ++i) {
      parents[perm[i]] = parents_[i] == -1 ? -1 : perm[parents_[i]];
      lengths[perm[i]] = lengths_[i];
    }
    std::vector<int> leaves;
    for (int leaf : leaves_) leaves.push_back(perm[leaf]);
    shuffle(leaves);
    return SharingTree::from_parents(parents, lengths, leaves);
  }

 private:
  void grow(int parent, int level) {
    const bool internal = level < max_depth_ && (level == 1 || rng_.chance(60));
    const int id = static_cast<int>(parents_.size());
    parents_.push_back(parent);
    lengths_.push_back(internal || max_depth_ == 1 ? shared_length(level) : leaf_length());
    if (max_depth_ == 1) lengths_.back() = std::max(lengths_.back(), q_len_ - 1);  // a flat tree's roots are leaves
    if (!internal) {
      leaves_.push_back(id);
      return;
    }
    for (int c = 1 + rng_.below(3); c > 0; --c) grow(id, level + 1);
  }
  int shared_length(int level) {
    if (rng_.chance(15)) return 0;
    if (level == 1 && rng_.chance(20)) return 1;
    return level == 1 ? 1 + rng_.below(200) : rng_.below(48);
  }
  int leaf_length() { return q_len_ - 1 + (rng_.chance(25) ? 0 : rng_.below(40)); }
  void shuffle(std::vector<int>& xs) {
    for (int i = static_cast<int>(xs.size()) - 1; i > 0; --i) std::swap(xs[i], xs[rng_.below(i + 1)]);
  }

  Rng& rng_;
  int max_depth_, q_len_;
  std::vector<int> parents_, lengths_, leaves_;
};

RandomProblem random_problem(int index) {
  Rng rng(0xC0FFEEull + static_cast<std::uint64_t>(index) * 7919);
  // (Hq, Hkv): g = 1, 1, 4, 4, 8, and MQA with Hq = 4, 8, 16.
  static constexpr int kHeads[][2] = {{4, 4}, {8, 8}, {8, 2}, {16, 4}, {16, 2}, {4, 1}, {8, 1}, {16, 1}};
  const auto& heads = kHeads[rng.below(8)];
  const int head_dim = rng.chance(50) ? 64 : 128;
  const int q_len = rng.chance(33) ? 4 : 1;
  const double q_scale = index % 5 == 4 ? 1e4 : 1.0;  // every fifth problem: scores of about +-1e4
  const SharingTree tree = TreeBuilder(rng, 1 + rng.below(3), q_len).build();
  const AttentionShape shape = make_shape(tree.num_seqs(), q_len, heads[0], heads[1], head_dim, DType::fp64);
  std::ostringstream text;
  text << "problem " << index << ": " << shape.describe() << ", " << tree.describe() << ", q_scale " << q_scale;
  return {make_problem(shape, tree, static_cast<std::uint64_t>(index), q_scale), q_scale, text.str()};
}

struct Errors {
  double o_rel_l2 = 0;  // ||o - r|| / ||r||
  double lse_rel = 0;   // max |l - r| / max(1, |r|); both -inf counts as equal
};

Errors errors(const Results& out, const Results& ref) {
  double err_sq = 0, ref_sq = 0;
  for (std::size_t i = 0; i < ref.o.size(); ++i) {
    err_sq += (out.o[i] - ref.o[i]) * (out.o[i] - ref.o[i]);
    ref_sq += ref.o[i] * ref.o[i];
  }
  Errors e;
  e.o_rel_l2 = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);  // NaN propagates
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    const double l = out.lse[i], r = ref.lse[i];
    const double err = (std::isinf(l) || std::isinf(r)) ? (l == r ? 0 : std::numeric_limits<double>::infinity())
                                                        : std::fabs(l - r) / std::max(1.0, std::fabs(r));
    e.lse_rel = std::isnan(err) || std::isnan(e.lse_rel) ? std::numeric_limits<double>::quiet_NaN() : std::max(e.lse_rel, err);
  }
  return e;
}

// Runs every problem whose logit scale is `q_scale`, asserting the bound on each, and prints the maxima.
void prove(double q_scale) {
  const AttentionBackend& reference = backend("reference");
  const AttentionBackend& decomposed = backend("reference-decomposed");
  Errors worst;
  int count = 0;
  for (int i = 0; i < kProblems; ++i) {
    const RandomProblem rp = random_problem(i);
    if (rp.q_scale != q_scale) continue;
    ++count;
    const Errors e = errors(run_backend(decomposed, rp.problem), run_backend(reference, rp.problem));
    EXPECT_LE(e.o_rel_l2, kBound) << rp.text;
    EXPECT_LE(e.lse_rel, kBound) << rp.text;
    worst.o_rel_l2 = std::max(worst.o_rel_l2, e.o_rel_l2);
    worst.lse_rel = std::max(worst.lse_rel, e.lse_rel);
  }
  std::cout << "[exactness] q_scale " << q_scale << ": " << count << " problems, max O relative L2 error "
            << worst.o_rel_l2 << ", max LSE error / max(1, |lse|) " << worst.lse_rel << " (bound " << kBound << ")\n";
  ::testing::Test::RecordProperty("max_o_rel_l2", std::to_string(worst.o_rel_l2));
  ::testing::Test::RecordProperty("max_lse_rel", std::to_string(worst.lse_rel));
}

TEST(Exactness, DecomposedEqualsReferenceTo1e12OnRandomTrees) { prove(1.0); }

TEST(Exactness, DecomposedEqualsReferenceTo1e12WithLogitsNear1e4) { prove(1e4); }

// The random problems really contain every case the proof claims to cover.
TEST(Exactness, RandomProblemsCoverTheRequiredCases) {
  std::set<int> group_sizes, head_dims;
  int mqa = 0, causal = 0, extreme = 0, depth3_uneven = 0, forests = 0, one_token_prefix = 0, empty_shared = 0,
      empty_leaf = 0, causal_minimum_leaf = 0, total = 0;
  for (int i = 0; i < kProblems; ++i) {
    const RandomProblem rp = random_problem(i);
    const AttentionShape& s = rp.problem.shape;
    const SharingTree& t = rp.problem.tree;
    ++total;
    group_sizes.insert(s.group_size());
    head_dims.insert(s.head_dim);
    mqa += s.kv_heads == 1;
    causal += s.q_len > 1;
    extreme += rp.q_scale == 1e4;
    std::set<std::size_t> fanouts, path_depths;
    int roots = 0;
    for (int seg = 0; seg < t.num_segments(); ++seg) {
      roots += t.parent(seg) == -1;
      if (!t.is_leaf(seg)) fanouts.insert(t.children(seg).size());
      const bool shared = t.seqs_below(seg).size() > 1;
      one_token_prefix += shared && t.parent(seg) == -1 && t.length(seg) == 1;
      empty_shared += !t.is_leaf(seg) && t.length(seg) == 0;
      empty_leaf += t.is_leaf(seg) && t.length(seg) == 0;
    }
    for (int q = 0; q < t.num_seqs(); ++q) {
      path_depths.insert(t.path(q).size());
      causal_minimum_leaf += s.q_len > 1 && t.length(t.leaf(q)) == s.q_len - 1;
    }
    depth3_uneven += t.depth() == 3 && (fanouts.size() > 1 || path_depths.size() > 1);
    forests += roots > 1;
  }
  EXPECT_GE(total, 200);
  EXPECT_EQ(group_sizes, (std::set<int>{1, 4, 8, 16}));  // 16: MQA with Hq = 16
  EXPECT_EQ(head_dims, (std::set<int>{64, 128}));
  for (const auto& [what, n] : std::vector<std::pair<const char*, int>>{{"MQA", mqa},
                                                                         {"q_len 4", causal},
                                                                         {"logits near 1e4", extreme},
                                                                         {"depth 3, uneven fan-out", depth3_uneven},
                                                                         {"forests", forests},
                                                                         {"1-token shared prefix", one_token_prefix},
                                                                         {"empty shared segment", empty_shared},
                                                                         {"empty leaf", empty_leaf},
                                                                         {"leaf of q_len-1 tokens", causal_minimum_leaf}}) {
    EXPECT_GE(n, 10) << what;
    std::cout << "[exactness coverage] " << what << ": " << n << "\n";
  }
}

}  // namespace
}  // namespace hydragen
