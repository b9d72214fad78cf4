#pragma once
// The two kernels cuda-hydragen-cublas runs beside its cuBLAS products: the gather of a shared
// segment's stacked queries into one matrix per KV head, and the softmax of a chunk's scores.
#include <cmath>

#include "hydragen/cuda/block_reduce.cuh"
#include "hydragen/cuda/element.cuh"
#include "params.hpp"
#include "row_end.cuh"
#include "tile_config.hpp"

namespace hydragen::cuda {

inline constexpr int kGatherThreads = 128;

// Row i of `gathered` is query row row_query[i] of Q; one 16-byte chunk per thread.
template <typename T, int D>
__global__ void __launch_bounds__(kGatherThreads) gather_queries(const GatherParams p) {
  constexpr int kChunks = D * static_cast<int>(sizeof(T)) / 16;  // per row
  const long long total = static_cast<long long>(p.num_rows) * kChunks;
  for (long long c = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; c < total;
       c += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = c / kChunks, chunk = c % kChunks;
    const uint4* src = reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + static_cast<long long>(p.row_query[row]) * D);
    reinterpret_cast<uint4*>(static_cast<T*>(p.gathered) + row * D)[chunk] = src[chunk];
  }
}

// One block per (KV head, stacked row), the row's scores in its registers (PER_THREAD each, so the
// scores are read once): the max and the sum of the visible scaled scores over the block, then
// P = exp(s - max) / sum; masked positions and rows that see nothing get P = 0 (LSE -inf). The
// launch picks the smallest PER_THREAD that holds the chunk: fewer registers, more blocks per SM.
template <typename T, int PER_THREAD>
__global__ void __launch_bounds__(kSoftmaxThreads) chunk_softmax(const ChunkSoftmaxParams p) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const long long pair = blockIdx.x;  // kv_head * rows + r
  const int partial = p.first_row + static_cast<int>(pair);  // the chunk's rows are KV head by KV head
  const int visible = max(0, min(p.row_limit[partial] - p.token_begin, p.tokens));
  const float* s = p.scores + pair * p.row_stride;
  T* const prob = static_cast<T*>(p.probabilities) + pair * p.row_stride;

  float x[PER_THREAD];  // token threadIdx.x + i * kSoftmaxThreads, scaled to log2 units
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int t = threadIdx.x + i * kSoftmaxThreads;
    x[i] = t < visible ? s[t] * p.scale_log2 : -INFINITY;
    m = fmaxf(m, x[i]);
  }
  m = block_reduce<kSoftmaxThreads>(m, [](float a, float b) { return fmaxf(a, b); }, scratch);
  float l = 0.f;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    x[i] = m == -INFINITY ? 0.f : exp2f(x[i] - m);  // exp2(-inf) = 0 for the masked positions
    l += x[i];
  }
  l = block_reduce<kSoftmaxThreads>(l, [](float a, float b) { return a + b; }, scratch);
  const float inv = row_inv(l);
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int t = threadIdx.x + i * kSoftmaxThreads;
    if (t < p.row_stride) prob[t] = from_float<T>(x[i] * inv);
  }
  if (threadIdx.x == 0) p.partial_lse[partial] = row_lse(m, l);
}

}  // namespace hydragen::cuda
