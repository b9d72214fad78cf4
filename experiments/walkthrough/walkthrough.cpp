#include "walkthrough/walkthrough.hpp"

#include "flags/flag_checks.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "hydragen/cost_model.hpp"
#include "hydragen/merge.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"

namespace hydragen::walkthrough {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Scores are multiplied by at least this in step 6, so exp() overflows (fp64 stops at ~709.78).
constexpr double kLargeFactor = 1000;
// The device machine's H100 (shared/DESIGN.md section 6): bf16 GEMM and copy bandwidth.
constexpr double kH100FlopsPerS = 842e12;
constexpr double kH100BytesPerS = 3.03e12;
// Every key and every element of q, K and V is printed: beyond these (256, the largest head dim the
// backends take) the walkthrough is no longer readable. The batched view builds a tree of B sequences.
constexpr int kMaxKeys = 1000;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxBatch = 1 << 20;

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}
std::string f6(double x) { return fmt("%.6f", x); }
std::string e3(double x) { return fmt("%.3e", x); }

std::string vec(const std::vector<double>& x, const char* format = "%.6f") {
  std::string s = "[";
  for (std::size_t i = 0; i < x.size(); ++i) s += (i ? " " : "") + fmt(format, x[i]);
  return s + "]";
}

std::vector<double> row(const std::vector<double>& m, int dim, int r) {
  return {m.begin() + static_cast<std::ptrdiff_t>(r) * dim, m.begin() + static_cast<std::ptrdiff_t>(r + 1) * dim};
}

std::vector<double> slice(const std::vector<double>& x, int begin, int end) {
  return {x.begin() + begin, x.begin() + end};
}

void print_partial(std::ostream& out, const std::string& name, const std::vector<double>& s, const Partial& p,
                   int begin, int end) {
  out << "  " << name << ": keys [" << begin << ", " << end << ")";
  if (begin == end) out << " (empty)";
  out << "\n";
  out << "    s      = " << vec(slice(s, begin, end)) << "\n";
  out << "    max    = " << f6(p.max) << "\n";
  std::vector<double> e;
  for (int j = begin; j < end; ++j) e.push_back(std::exp(s[j] - p.max));
  out << "    exp(s - max) = " << vec(e) << "\n";
  out << "    sum    = " << f6(p.sum) << "\n";
  out << "    lse    = max + log(sum) = " << f6(p.lse) << "\n";
  out << "    o      = " << vec(p.o) << "\n";
}

}  // namespace

void WalkthroughOptions::validate() const {
  auto bad = [](const std::string& field, const std::string& value, const std::string& why) {
    throw std::invalid_argument(field + "=" + value + ": " + why);
  };
  if (keys < 1) bad("--keys", std::to_string(keys), "must be at least 1");
  if (keys > kMaxKeys) bad("--keys", std::to_string(keys), "must be at most " + std::to_string(kMaxKeys));
  if (split < 0 || split > keys) bad("--split", std::to_string(split), "must be in 0..keys (" + std::to_string(keys) + ")");
  if (head_dim < 1) bad("--head-dim", std::to_string(head_dim), "must be at least 1");
  if (head_dim > kMaxHeadDim) bad("--head-dim", std::to_string(head_dim), "must be at most " + std::to_string(kMaxHeadDim));
  if (!std::isfinite(scale_logits)) bad("--scale-logits", fmt("%g", scale_logits), "must be finite");
  if (batch < 1) bad("--batch", std::to_string(batch), "must be at least 1");
  if (batch > kMaxBatch) bad("--batch", std::to_string(batch), "must be at most " + std::to_string(kMaxBatch));
  if (prefix < 0) bad("--prefix", std::to_string(prefix), "must be at least 0");
  if (suffix < 0) bad("--suffix", std::to_string(suffix), "must be at least 0");
}

Example make_example(const WalkthroughOptions& options) {
  Example ex;
  ex.keys = options.keys;
  ex.dim = options.head_dim;
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto draw = [&](std::size_t n) {
    std::vector<double> x(n);
    for (double& value : x) value = normal(rng);
    return x;
  };
  const std::size_t kd = static_cast<std::size_t>(ex.keys) * ex.dim;
  ex.q = draw(ex.dim);
  ex.k = draw(kd);
  ex.v = draw(kd);
  return ex;
}

std::vector<double> scores(const Example& ex, double factor) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(ex.dim));
  std::vector<double> s(ex.keys);
  for (int j = 0; j < ex.keys; ++j) {
    double dot = 0;
    for (int d = 0; d < ex.dim; ++d) dot += ex.q[d] * ex.k[static_cast<std::size_t>(j) * ex.dim + d];
    s[j] = factor * dot * scale;
  }
  return s;
}

Partial attend(const Example& ex, const std::vector<double>& s, int begin, int end) {
  Partial p;
  p.o.assign(ex.dim, 0.0);
  p.max = -kInf;
  for (int j = begin; j < end; ++j) p.max = std::max(p.max, s[j]);
  if (begin == end) {
    p.sum = 0;
    p.lse = -kInf;
    return p;
  }
  for (int j = begin; j < end; ++j) p.sum += std::exp(s[j] - p.max);
  p.lse = p.max + std::log(p.sum);
  for (int j = begin; j < end; ++j) {
    const double w = std::exp(s[j] - p.max) / p.sum;  // not exp(s_j - lse): lse carries ulp(|lse|)
    for (int d = 0; d < ex.dim; ++d) p.o[d] += w * ex.v[static_cast<std::size_t>(j) * ex.dim + d];
  }
  return p;
}

Partial merge(const Partial& a, const Partial& b) {
  Partial m = a;
  m.max = std::max(a.max, b.max);
  m.sum = 0;  // not tracked by the merge: it only needs the LSEs
  merge_into(m.o.data(), m.lse, b.o.data(), b.lse, static_cast<int>(m.o.size()));
  return m;
}

double relay_alpha(double lse_a, double lse_b) { return 1.0 / (1.0 + std::exp(lse_b - lse_a)); }

std::vector<double> relay_output(const Partial& a, const Partial& b) {
  const double alpha = relay_alpha(a.lse, b.lse);
  std::vector<double> o(a.o.size());
  for (std::size_t d = 0; d < o.size(); ++d) o[d] = alpha * a.o[d] + (1 - alpha) * b.o[d];
  return o;
}

double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

void walkthrough(const WalkthroughOptions& options, std::ostream& out) {
  options.validate();
  const Example ex = make_example(options);
  const int n = ex.keys, split = options.split;

  out << "hydragen-walkthrough: attention of one query over " << n << " keys, D=" << ex.dim
      << ", fp64, seed " << options.seed << " (docs/lse-trick.md explains each step)\n\n";

  out << "Step 0. The inputs (std::mt19937_64, N(0,1), drawn in the order q, K, V)\n";
  out << "  q   = " << vec(ex.q) << "\n";
  for (int j = 0; j < n; ++j) out << "  k[" << j << "] = " << vec(row(ex.k, ex.dim, j)) << "\n";
  for (int j = 0; j < n; ++j) out << "  v[" << j << "] = " << vec(row(ex.v, ex.dim, j)) << "\n";
  out << "\n";

  const std::vector<double> s = scores(ex, options.scale_logits);
  out << "Step 1. The scores s_j = " << (options.scale_logits == 1 ? "" : fmt("%g * ", options.scale_logits))
      << "(q . k_j) / sqrt(D)\n";
  out << "  s = " << vec(s) << "\n\n";

  const Partial full = attend(ex, s, 0, n);
  std::vector<double> p(n);
  for (int j = 0; j < n; ++j) p[j] = std::exp(s[j] - full.lse);
  out << "Step 2. Softmax over all keys at once (the definition)\n";
  out << "  max = " << f6(full.max) << "\n";
  std::vector<double> e(n);
  for (int j = 0; j < n; ++j) e[j] = std::exp(s[j] - full.max);
  out << "  exp(s - max) = " << vec(e) << "\n";
  out << "  sum = " << f6(full.sum) << "\n";
  out << "  lse_full = max + log(sum) = " << f6(full.lse) << "\n";
  out << "  p = exp(s - lse_full) = " << vec(p) << "\n";
  out << "  o_full = sum_j p_j v_j = " << vec(full.o) << "\n\n";

  const Partial c1 = attend(ex, s, 0, split);
  const Partial c2 = attend(ex, s, split, n);
  out << "Step 3. The keys split into two chunks, each attended on its own (--split " << split << ")\n";
  print_partial(out, "chunk 1", s, c1, 0, split);
  print_partial(out, "chunk 2", s, c2, split, n);
  out << "\n";

  const MergeWeights<double> w = merge_weights(c1.lse, c2.lse);
  const Partial merged = merge(c1, c2);
  out << "Step 4. The merge (core's merge_weights / merge_into, natural log)\n";
  out << "  w1 = e^lse1 / (e^lse1 + e^lse2) = " << f6(w.a) << "\n";
  out << "  w2 = e^lse2 / (e^lse1 + e^lse2) = " << f6(w.b) << "\n";
  out << "  lse_merged = log(e^lse1 + e^lse2) = " << f6(merged.lse) << "\n";
  out << "  o_merged = w1 o1 + w2 o2 = " << vec(merged.o) << "\n\n";

  out << "Step 5. The difference from the full result\n";
  out << "  max|o_merged - o_full| = " << e3(max_abs_diff(merged.o, full.o)) << "\n";
  out << "  |lse_merged - lse_full| = " << e3(std::abs(merged.lse - full.lse)) << "\n\n";

  out << "Step 6. Large logits: the naive softmax breaks, the max-subtracted form does not\n";
  out << "  fp64 exp() overflows to inf above 709.78 and underflows to 0 below -745.13. Adding the same\n"
         "  constant to every score leaves the softmax unchanged, so 6a and 6b have step 2's answer.\n\n";
  const double factor = std::max(kLargeFactor, options.scale_logits);
  struct Variant {
    const char* title;
    std::vector<double> s;
  };
  std::vector<Variant> variants(3);
  variants[0].title = "Step 6a. Logits near +1000: s + 1000";
  variants[1].title = "Step 6b. Logits near -1000: s - 1000";
  variants[2].title = "Step 6c. Logits up to +-1000: s * ";
  for (double x : s) {
    variants[0].s.push_back(x + kLargeFactor);
    variants[1].s.push_back(x - kLargeFactor);
  }
  variants[2].s = scores(ex, factor);
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::vector<double>& sb = variants[i].s;
    out << variants[i].title << (i == 2 ? fmt("%g", factor) + " (a near one-hot softmax)" : std::string()) << "\n";
    out << "  s_big = " << vec(sb) << "\n";
    std::vector<double> naive_e(n), naive_p(n), naive_o(ex.dim, 0.0);
    double naive_sum = 0;
    for (int j = 0; j < n; ++j) naive_sum += naive_e[j] = std::exp(sb[j]);
    for (int j = 0; j < n; ++j) naive_p[j] = naive_e[j] / naive_sum;
    for (int j = 0; j < n; ++j)
      for (int d = 0; d < ex.dim; ++d) naive_o[d] += naive_p[j] * ex.v[static_cast<std::size_t>(j) * ex.dim + d];
    out << "  naive exp(s) = " << vec(naive_e, "%.3e") << "\n";
    out << "  naive sum = " << e3(naive_sum) << "\n";
    out << "  naive p = exp(s) / sum = " << vec(naive_p) << "\n";
    out << "  naive o = " << vec(naive_o) << "\n";
    const bool broke = std::any_of(naive_o.begin(), naive_o.end(), [](double x) { return !std::isfinite(x); });
    if (!broke)
      out << "  -> the naive form survives at this seed (no exp() left the fp64 range)\n";
    else if (std::isinf(naive_sum))
      out << "  -> exp() overflowed: inf / inf = nan, and nan spreads into o\n";
    else if (naive_sum == 0)
      out << "  -> every exp() underflowed to 0: 0 / 0 = nan\n";
    else
      out << "  -> non-finite values in o\n";
    const Partial b1 = attend(ex, sb, 0, split);
    const Partial b2 = attend(ex, sb, split, n);
    const Partial big_merged = merge(b1, b2);
    const Partial big_full = attend(ex, sb, 0, n);
    out << "  stable chunk 1: max = " << f6(b1.max) << "  sum = " << f6(b1.sum) << "  lse1 = " << f6(b1.lse) << "\n";
    out << "  stable chunk 2: max = " << f6(b2.max) << "  sum = " << f6(b2.sum) << "  lse2 = " << f6(b2.lse) << "\n";
    out << "  stable lse_merged = " << f6(big_merged.lse) << "\n";
    out << "  stable o_merged = " << vec(big_merged.o) << "\n";
    out << "  stable o_full (max-subtracted softmax over all keys) = " << vec(big_full.o) << "\n";
    out << "  stable max|o_merged - o_full| = " << e3(max_abs_diff(big_merged.o, big_full.o)) << "\n";
    if (i < 2)
      out << "  (not ~1e-16: an LSE near 1000 is stored to ulp(1000) = 1.1e-13, and the merge weights\n"
             "   exp(lse1 - lse2) inherit that absolute error; in fp32 ulp(1000) is 6.1e-5)\n";
    out << "\n";
  }

  const AttentionShape shape = make_shape(options.batch, 1, options.q_heads, options.kv_heads, options.cost_head_dim,
                                          DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(options.prefix, std::vector<int>(options.batch, options.suffix));
  const CostEstimate cost = estimate_cost(shape, tree);
  const double flat_i = cost.flops / cost.flat_bytes;
  const double dec_i = cost.decomposed_intensity();
  const double ridge = kH100FlopsPerS / kH100BytesPerS;
  out << "Step 7. The batched view: B queries over one prefix (cost model, estimate_cost)\n";
  out << "  B=" << options.batch << " P=" << options.prefix << " S=" << options.suffix << " Hq=" << options.q_heads
      << " Hkv=" << options.kv_heads << " D=" << options.cost_head_dim << " bf16, one query per sequence\n";
  out << "  FLOPs = " << fmt("%.0f", cost.flops) << "\n";
  out << "  flat bytes = " << fmt("%.0f", cost.flat_bytes) << "\n";
  out << "  hydragen bytes = " << fmt("%.0f", cost.decomposed_bytes) << "\n";
  out << "  flat intensity = " << fmt("%.3f", flat_i) << " FLOP/byte\n";
  out << "  hydragen intensity = " << fmt("%.3f", dec_i) << " FLOP/byte\n";
  out << "  Flat reads the prefix once per sequence, so it does " << fmt("%.1f", flat_i)
      << " FLOP per byte and is memory-bound; Hydragen reads it once per batch ("
      << fmt("%.1f", cost.flat_bytes / cost.decomposed_bytes) << "x fewer bytes, " << fmt("%.1f", dec_i)
      << " FLOP/byte), nearer the " << fmt("%.0f", ridge)
      << " FLOP/byte an H100 needs to be compute-bound (842 TFLOP/s over 3.03 TB/s).\n\n";

  const double alpha = relay_alpha(c1.lse, c2.lse);
  const std::vector<double> relay = relay_output(c1, c2);
  out << "Step 8. RelayAttention's form of the same merge (a sigmoid of the LSE difference)\n";
  out << "  alpha = 1 / (1 + exp(lse2 - lse1)) = " << f6(alpha) << "\n";
  out << "  o_relay = alpha o1 + (1 - alpha) o2 = " << vec(relay) << "\n";
  out << "  max|o_relay - o_merged| = " << e3(max_abs_diff(relay, merged.o)) << "\n";
  out << "  max|o_relay - o_full| = " << e3(max_abs_diff(relay, full.o)) << "\n";
}

namespace {

using flags::decimal;
using flags::empty_error;

}  // namespace

int run_cli(int argc, const char* const argv[], std::ostream& out, std::ostream& err) noexcept {
  try {
    WalkthroughOptions o;
    CLI::App app{"hydragen-walkthrough: the LSE trick (split attention, merge by log-sum-exp) printed step by step "
                 "with real numbers; docs/lse-trick.md explains each step."};
    // TakeLast only so that a repeated flag reaches the check below, which refuses it by name.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    auto add_integer = [&app](const char* flag, auto& value, const std::string& help) {
      app.add_option(flag, value, help)->capture_default_str()->check(decimal<std::remove_reference_t<decltype(value)>>());
    };
    add_integer("--seed", o.seed, "seed of std::mt19937_64 drawing q, K, V from N(0,1)");
    add_integer("--keys", o.keys, "number of keys, 1.." + std::to_string(kMaxKeys));
    add_integer("--split", o.split, "size of the first chunk, 0..keys");
    add_integer("--head-dim", o.head_dim, "D of the worked example, 1.." + std::to_string(kMaxHeadDim));
    app.add_option("--scale-logits", o.scale_logits, "multiplies the scores (step 6c multiplies the unscaled scores by max(1000, this))")
        ->capture_default_str()
        ->check(CLI::Validator(empty_error, ""));
    add_integer("--batch", o.batch, "B of the batched view (step 7), 1.." + std::to_string(kMaxBatch));
    add_integer("--prefix", o.prefix, "P of the batched view");
    add_integer("--suffix", o.suffix, "S of the batched view");
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      out << app.help();
      return exit_ok;
    } catch (const CLI::ParseError& e) {
      err << "hydragen-walkthrough: error: " << e.what() << '\n';
      return exit_usage;
    }
    flags::reject_repeats(app);
    o.validate();
    // Steps 1 and 6c multiply the scores by the factor: past fp64's range every later number is nan.
    for (double s : scores(make_example(o), std::max(kLargeFactor, std::abs(o.scale_logits)))) {
      if (!std::isfinite(s)) {
        throw std::invalid_argument("--scale-logits=" + fmt("%g", o.scale_logits) + ": the scores overflow fp64");
      }
    }
    // Printed only once complete: an error part-way leaves no half walkthrough on stdout.
    std::ostringstream text;
    walkthrough(o, text);
    out << text.str();
    return exit_ok;
  } catch (const std::invalid_argument& e) {
    err << "hydragen-walkthrough: error: " << e.what() << '\n';
    return exit_usage;
  } catch (const std::exception& e) {
    err << "hydragen-walkthrough: failed: " << e.what() << '\n';
    return 1;
  } catch (...) {
    err << "hydragen-walkthrough: failed\n";
    return 1;
  }
}

}  // namespace hydragen::walkthrough
