#pragma once
// The one LSE merge, used by every backend on host and device, and by the fp64 reference.
//
// A partial result of attention over a set of keys is (o, lse): o = softmax-weighted sum of values
// over those keys, lse = log(sum_j exp(s_j)) of their scaled scores, natural log. Two partials over
// disjoint key sets combine exactly:
//   lse = log(e^lse_a + e^lse_b),   o = (e^lse_a o_a + e^lse_b o_b) / (e^lse_a + e^lse_b).
// Computed with the larger LSE subtracted, so nothing overflows: the larger side gets weight
// 1/(1+t) and the other t/(1+t), t = e^(min-max) in [0, 1]. An empty key set is the identity
// (o = 0, lse = -inf). RelayAttention writes the same weight as a sigmoid: 1/(1+e^(lse_b-lse_a)).
#include <cmath>

#include "hydragen/host_device.hpp"

namespace hydragen {

template <typename T>
struct MergeWeights {
  T a;    // weight of partial a's output
  T b;    // weight of partial b's output
  T lse;  // LSE of the union
};

template <typename T>
HYDRAGEN_HD MergeWeights<T> merge_weights(T lse_a, T lse_b) {
  using std::exp;  // float overloads on the host; nvcc maps them to the device intrinsics
  using std::log1p;
  const T hi = lse_a > lse_b ? lse_a : lse_b;
  const T lo = lse_a > lse_b ? lse_b : lse_a;
  if (hi == -INFINITY) return {T(0), T(0), hi};  // both empty: the union is empty too
  const T t = exp(lo - hi);                        // lo == -inf gives exactly 0
  const T w_hi = T(1) / (T(1) + t);
  const T w_lo = t * w_hi;
  const T lse = hi + log1p(t);
  return lse_a > lse_b ? MergeWeights<T>{w_hi, w_lo, lse} : MergeWeights<T>{w_lo, w_hi, lse};
}

// Many partials at once, where all their LSEs are known before any output is read (the CUDA merge
// kernel: a warp's lanes hold a round of LSEs). With m = max_i lse_i and s_i = e^(lse_i - m),
//   lse = m + log(sum_i s_i),   o = sum_i (s_i / sum_j s_j) o_i:
// the union that folding them pairwise with merge_weights gives, normalized once instead of once per
// partial, so that no partial's weight waits for the fold before it. merge_scale is s_i (0 for an
// empty partial, also when every partial is empty), merged_lse the union's LSE from m and the sum,
// merged_inv the factor that normalizes the weighted outputs' sum (0 when every partial is empty).
template <typename T>
HYDRAGEN_HD T merge_scale(T lse, T max_lse) {
  using std::exp;
  return lse == -INFINITY ? T(0) : exp(lse - max_lse);
}

template <typename T>
HYDRAGEN_HD T merged_lse(T max_lse, T scale_sum) {
  using std::log;
  return max_lse == -INFINITY ? max_lse : max_lse + log(scale_sum);
}

template <typename T>
HYDRAGEN_HD T merged_inv(T scale_sum) {
  return scale_sum > T(0) ? T(1) / scale_sum : T(0);
}

// Merges partial b into partial a in place: o_a and o_b hold `n` values each.
template <typename T, typename Acc, typename Src>
HYDRAGEN_HD void merge_into(Acc* o_a, T& lse_a, const Src* o_b, T lse_b, int n) {
  const MergeWeights<T> w = merge_weights(lse_a, lse_b);
  for (int i = 0; i < n; ++i) o_a[i] = static_cast<Acc>(w.a * static_cast<T>(o_a[i]) + w.b * static_cast<T>(o_b[i]));
  lse_a = w.lse;
}

}  // namespace hydragen
