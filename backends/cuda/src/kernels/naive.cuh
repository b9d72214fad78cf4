#pragma once
// cuda-naive: the simplest correct kernel, kept for teaching. One block per query row walks its
// sequence's path three times: scores into a global buffer, softmax in place, then O = P V with
// one thread per output column. No tiling, no shared K/V, no tensor cores.
#include <cmath>

#include "hydragen/cuda/block_reduce.cuh"
#include "hydragen/cuda/element.cuh"
#include "hydragen/indexing.hpp"
#include "leaf_length.cuh"
#include "params.hpp"

namespace hydragen::cuda {

inline constexpr int kNaiveThreads = 128;

template <typename T, int D>
__global__ void __launch_bounds__(kNaiveThreads) naive_attention(const NaiveParams p) {
  __shared__ float sq[D];
  __shared__ float scratch[kNaiveThreads / 32];
  const int query = blockIdx.x;  // a row of [B, q_len, Hq]
  const QueryIndex index{p.q_len, p.q_heads, p.q_heads / p.kv_heads};
  const int seq = index.seq_of(query), qi = index.qi_of(query), kv_head = index.kv_head_of(query);
  for (int d = threadIdx.x; d < D; d += kNaiveThreads) sq[d] = to_float(static_cast<const T*>(p.q)[static_cast<long long>(query) * D + d]);
  __syncthreads();

  float* const scores = p.scores + static_cast<long long>(query) * p.max_path;
  const int first = p.path_offsets[seq], last = p.path_offsets[seq + 1];
  // Visible tokens of path segment i: all, or the causal part of the leaf (as long as it is this run).
  auto visible = [&](int i) {
    const int length = p.segment_length[p.path_segments[i]];
    if (i != last - 1) return length;
    return max(0, static_cast<int>(attended_tokens(leaf_tokens(p.leaf_lengths, seq, length), true, p.q_len, qi)));
  };

  float local_max = -INFINITY;
  long long pos = 0;
  for (int i = first; i < last; ++i) {
    const T* const k = static_cast<const T*>(p.k[p.path_segments[i]]);
    const int n = visible(i);
    for (int t = threadIdx.x; t < n; t += kNaiveThreads) {
      const T* const key = k + (static_cast<long long>(t) * p.kv_heads + kv_head) * D;
      float dot = 0.f;
      for (int d = 0; d < D; ++d) dot += sq[d] * to_float(key[d]);
      scores[pos + t] = dot * p.scale;
      local_max = fmaxf(local_max, dot * p.scale);
    }
    pos += n;
  }
  const float m = block_reduce<kNaiveThreads>(local_max, [](float a, float b) { return fmaxf(a, b); }, scratch);
  float local_sum = 0.f;
  // The scores were written before the reduction's barrier, so every thread sees all of them.
  for (long long t = threadIdx.x; t < pos; t += kNaiveThreads) {
    scores[t] = expf(scores[t] - m);
    local_sum += scores[t];
  }
  const float sum = block_reduce<kNaiveThreads>(local_sum, [](float a, float b) { return a + b; }, scratch);  // syncs: P visible

  for (int d = threadIdx.x; d < D; d += kNaiveThreads) {
    float acc = 0.f;
    long long at = 0;
    for (int i = first; i < last; ++i) {
      const T* const v = static_cast<const T*>(p.v[p.path_segments[i]]);
      const int n = visible(i);
      for (int t = 0; t < n; ++t) acc += scores[at + t] * to_float(v[(static_cast<long long>(t) * p.kv_heads + kv_head) * D + d]);
      at += n;
    }
    static_cast<T*>(p.o)[static_cast<long long>(query) * D + d] = from_float<T>(pos > 0 ? acc / sum : 0.f);
  }
  if (threadIdx.x == 0) p.lse[query] = pos > 0 ? m + logf(sum) : -INFINITY;
}

}  // namespace hydragen::cuda
