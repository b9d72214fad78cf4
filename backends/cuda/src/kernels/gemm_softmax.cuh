#pragma once
// The two kernels cuda-hydragen-cublas runs beside its cuBLAS products: the gather of a shared
// segment's stacked queries into one matrix per KV head, and the softmax of a chunk's scores.
#include <cmath>

#include "element.cuh"
#include "params.hpp"

namespace hydragen::cuda {

inline constexpr int kGemmKernelThreads = 128;

// Row i of `gathered` is query row row_query[i] of Q; one 16-byte chunk per thread.
template <typename T, int D>
__global__ void __launch_bounds__(kGemmKernelThreads) gather_queries(const GatherParams p) {
  constexpr int kChunks = D * static_cast<int>(sizeof(T)) / 16;  // per row
  const long long total = static_cast<long long>(p.num_rows) * kChunks;
  for (long long c = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; c < total;
       c += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = c / kChunks, chunk = c % kChunks;
    const uint4* src = reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + static_cast<long long>(p.row_query[row]) * D);
    reinterpret_cast<uint4*>(static_cast<T*>(p.gathered) + row * D)[chunk] = src[chunk];
  }
}

// One warp per (KV head, stacked row): the running max and sum of the visible scaled scores in one
// pass (the online softmax, per lane, then across the lanes), then P = exp(s - max) / sum in a
// second; masked positions and rows that see nothing get P = 0 (LSE -inf).
template <typename T>
__global__ void __launch_bounds__(kGemmKernelThreads) chunk_softmax(const ChunkSoftmaxParams p) {
  constexpr float kLn2 = 0.6931471805599453f;
  const int lane = threadIdx.x % 32;
  const long long pair = blockIdx.x * static_cast<long long>(kGemmKernelThreads / 32) + threadIdx.x / 32;
  if (pair >= static_cast<long long>(p.kv_heads) * p.rows) return;
  const int kv_head = static_cast<int>(pair / p.rows), r = static_cast<int>(pair % p.rows);
  const int partial = p.first_row + kv_head * p.head_row_stride + r;
  const int visible = max(0, min(p.row_limit[partial] - p.token_begin, p.tokens));
  const float* s = p.scores + pair * p.row_stride;
  T* const prob = static_cast<T*>(p.probabilities) + pair * p.row_stride;

  float m = -INFINITY, l = 0.f;  // log2 units
  for (int t = lane; t < visible; t += 32) {
    const float x = s[t] * p.scale_log2;
    if (x > m) {
      l = l * exp2f(m - x) + 1.f;
      m = x;
    } else {
      l += exp2f(x - m);
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m_other = __shfl_xor_sync(0xffffffffu, m, offset), l_other = __shfl_xor_sync(0xffffffffu, l, offset);
    const float top = fmaxf(m, m_other);
    l = (l > 0.f ? l * exp2f(m - top) : 0.f) + (l_other > 0.f ? l_other * exp2f(m_other - top) : 0.f);
    m = top;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int t = lane; t < p.row_stride; t += 32) {
    prob[t] = from_float<T>(t < visible ? exp2f(s[t] * p.scale_log2 - m) * inv : 0.f);
  }
  if (lane == 0) p.partial_lse[partial] = l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
}

}  // namespace hydragen::cuda
