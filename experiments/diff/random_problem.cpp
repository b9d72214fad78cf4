#include "diff/random_problem.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hydragen::diff {

namespace {

// splitmix64 by hand rather than <random>'s distributions, whose results differ between standard
// libraries: a seed must name the same problems on every machine the soak runs on.
std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Draw {
 public:
  Draw(std::uint64_t seed, int index) : state_(mix(seed + 0x9e3779b97f4a7c15ULL) ^ mix(static_cast<std::uint64_t>(index) + 1)) {}
  std::uint64_t next() { return mix(state_ += 0x9e3779b97f4a7c15ULL); }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }  // bias < 2^-56
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  bool chance(double p) { return unit() < p; }
  template <typename T>
  const T& pick(const std::vector<T>& from) { return from[static_cast<std::size_t>(below(static_cast<int>(from.size())))]; }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (int i = static_cast<int>(v.size()) - 1; i > 0; --i) std::swap(v[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(below(i + 1))]);
  }

 private:
  std::uint64_t state_;
};

constexpr int kMaxSeqs = 8;
constexpr int kMaxQHeads = 48;

// Empty and one-token segments are the edge cases; the tail crosses the kernels' 64- and 128-token
// tiles a few times.
int draw_length(Draw& d) {
  const double u = d.unit();
  if (u < 0.15) return 0;
  if (u < 0.30) return 1;
  if (u < 0.65) return d.between(2, 16);
  if (u < 0.90) return d.between(17, 128);
  return d.between(129, 512);
}

// 1e-3 and 1e4 themselves, 1, and log-uniform between, rounded to two digits so repro lines stay short.
double draw_logit_scale(Draw& d) {
  const double u = d.unit();
  if (u < 0.1) return 1e-3;
  if (u < 0.2) return 1e4;
  if (u < 0.4) return 1.0;
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", std::pow(10.0, -3.0 + 7.0 * d.unit()));
  return std::strtod(text, nullptr);
}

// A forest of `depth` levels: fan-out 0-3 per node (the first node of each level has at least one
// child, so the depth is reached), no more than kMaxSeqs leaves. Segments are numbered level by level.
void draw_tree(Draw& d, int depth, Options& p) {
  std::vector<int> level(static_cast<std::size_t>(depth == 1 ? d.between(1, 4) : (d.chance(0.75) ? 1 : 2)));
  for (std::size_t i = 0; i < level.size(); ++i) {
    level[i] = static_cast<int>(i);
    p.parents.push_back(-1);
  }
  int finished_leaves = 0;
  for (int l = 1; l < depth; ++l) {
    std::vector<int> next;
    for (std::size_t i = 0; i < level.size(); ++i) {
      // Every node still to come becomes at least one leaf: keep room for them.
      const int room = kMaxSeqs - finished_leaves - static_cast<int>(next.size()) - static_cast<int>(level.size() - i - 1);
      const int fan_out = std::min(i == 0 ? d.between(1, 3) : d.between(0, 3), std::max(room, i == 0 ? 1 : 0));
      if (fan_out == 0) ++finished_leaves;
      for (int c = 0; c < fan_out; ++c) {
        next.push_back(static_cast<int>(p.parents.size()));
        p.parents.push_back(level[i]);
      }
    }
    level = std::move(next);
  }
}

// Lists segments and sequences in a random order: parents may then come after their children.
void shuffle_order(Draw& d, Options& p) {
  const std::size_t n = p.parents.size();
  std::vector<int> position(n);  // old index -> new index
  for (std::size_t i = 0; i < n; ++i) position[i] = static_cast<int>(i);
  d.shuffle(position);
  std::vector<int> parents(n), lengths(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t to = static_cast<std::size_t>(position[i]);
    parents[to] = p.parents[i] < 0 ? -1 : position[static_cast<std::size_t>(p.parents[i])];
    lengths[to] = p.lengths[i];
  }
  for (int& leaf : p.leaves) leaf = position[static_cast<std::size_t>(leaf)];
  d.shuffle(p.leaves);
  p.parents = std::move(parents);
  p.lengths = std::move(lengths);
}

std::string join(const std::vector<int>& values) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

// The shortest text that parses back to exactly `value`.
std::string exact_text(double value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, end);
}

}  // namespace

DrawSpace full_draw_space() {
  return {{DType::fp64, DType::fp32, DType::fp16, DType::bf16}, {16, 40, 64, 96, 128, 256}};
}

Options draw_problem(std::uint64_t seed, int index, const DrawSpace& space) {
  Draw d(seed, index);
  Options p;
  p.tree_source = TreeSource::segments;
  p.q_len = d.chance(0.4) ? 1 : d.between(2, 8);
  draw_tree(d, d.between(1, 4), p);

  std::vector<bool> has_child(p.parents.size(), false);
  for (int parent : p.parents) {
    if (parent >= 0) has_child[static_cast<std::size_t>(parent)] = true;
  }
  for (std::size_t s = 0; s < p.parents.size(); ++s) {
    // A leaf holds the causal queries' own tokens: at least q_len - 1 (DESIGN.md section 2).
    p.lengths.push_back(has_child[s] ? draw_length(d) : std::max(draw_length(d), p.q_len - 1));
    if (!has_child[s]) p.leaves.push_back(static_cast<int>(s));
  }
  shuffle_order(d, p);
  p.batch = static_cast<int>(p.leaves.size());

  // MHA (g = 1), GQA and MQA (Hkv = 1), up to g = 32.
  const int g = d.pick(std::vector<int>{1, 2, 3, 4, 8, 16, 32});
  p.kv_heads = d.pick(std::vector<int>{1, 2, 3, 4});
  if (g * p.kv_heads > kMaxQHeads) p.kv_heads = 1;
  p.q_heads = g * p.kv_heads;
  p.head_dim = d.pick(space.head_dims);
  p.dtype = d.pick(space.dtypes);
  p.storage = d.chance(0.5) ? Storage::shared : Storage::redundant;
  p.logit_scale = draw_logit_scale(d);
  p.seed = d.next() >> 32;
  return p;
}

std::vector<std::string> problem_args(const Options& p, const std::string& backend) {
  return {"--parents",  join(p.parents),
          "--lengths",  join(p.lengths),
          "--leaves",   join(p.leaves),
          "--batch",    std::to_string(p.leaves.size()),
          "--q-len",    std::to_string(p.q_len),
          "--q-heads",  std::to_string(p.q_heads),
          "--kv-heads", std::to_string(p.kv_heads),
          "--head-dim", std::to_string(p.head_dim),
          "--dtype",    std::string(dtype_name(p.dtype)),
          "--storage",  std::string(storage_name(p.storage)),
          "--seed",     std::to_string(p.seed),
          "--logit-scale", exact_text(p.logit_scale),
          "--backend",  backend};
}

std::string repro_command(const Options& problem, const std::string& backend) {
  std::string line = "hydragen-diff";
  for (const std::string& arg : problem_args(problem, backend)) line += " " + arg;
  return line;
}

}  // namespace hydragen::diff
