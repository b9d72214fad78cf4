#pragma once
// The LSE trick worked by hand: one query, a few keys, fp64, every intermediate printed
// (docs/lse-trick.md explains each step). The merge step calls core's merge_weights / merge_into,
// the routine every backend runs, so what it prints is what the kernels compute.
#include <cstdint>
#include <iosfwd>
#include <vector>

namespace hydragen::walkthrough {

struct WalkthroughOptions {
  std::uint64_t seed = 0;    // std::mt19937_64 seed; q, K, V drawn from N(0,1) in that order
  int keys = 6;              // number of keys (and values)
  int split = 3;             // size of the first chunk, 0..keys; the second chunk holds the rest
  int head_dim = 4;          // D of the worked example
  double scale_logits = 1;   // multiplies the scores q.k/sqrt(D)
  // The batched view (cost model): B queries over one shared prefix.
  int batch = 64;            // B
  int prefix = 4096;         // P
  int suffix = 64;           // S (each sequence's own tokens)
  int q_heads = 8;           // Hq
  int kv_heads = 1;          // Hkv
  int cost_head_dim = 128;   // D of the batched view (bf16)

  // Throws std::invalid_argument naming the first bad field and its value.
  void validate() const;
};

// The worked example's inputs: q [D], K and V [keys, D], row-major.
struct Example {
  int keys = 0;
  int dim = 0;
  std::vector<double> q, k, v;
};
Example make_example(const WalkthroughOptions& options);

// s_j = factor * (q . k_j) / sqrt(D).
std::vector<double> scores(const Example& ex, double factor);

// Attention of the query over keys [begin, end) with the max subtracted: max m, sum of exp(s_j - m),
// lse = m + log(sum), o = sum_j exp(s_j - lse) v_j. An empty range gives m = lse = -inf, sum = 0, o = 0.
struct Partial {
  double max = 0;
  double sum = 0;
  double lse = 0;
  std::vector<double> o;
};
Partial attend(const Example& ex, const std::vector<double>& s, int begin, int end);

// Two partials over disjoint key sets combined by core's merge_into.
Partial merge(const Partial& a, const Partial& b);

// RelayAttention's form: alpha = 1/(1+exp(lse_b - lse_a)), o = alpha o_a + (1 - alpha) o_b.
double relay_alpha(double lse_a, double lse_b);
std::vector<double> relay_output(const Partial& a, const Partial& b);

double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y);

// Prints the whole walkthrough. Throws std::invalid_argument on invalid options.
void walkthrough(const WalkthroughOptions& options, std::ostream& out);

inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;
// Parses the flags (CLI11) and prints the walkthrough; bad usage is one line on `err` and exit 2.
int run_cli(int argc, const char* const argv[], std::ostream& out, std::ostream& err) noexcept;

}  // namespace hydragen::walkthrough
