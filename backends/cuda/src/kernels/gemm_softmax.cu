// Launches of cuda-hydragen-cublas's gather and softmax kernels.
#include <algorithm>

#include "dispatch.cuh"
#include "gemm_softmax.cuh"
#include "launch.hpp"

namespace hydragen::cuda {

void launch_gather(const GatherParams& params, DType dtype, int head_dim, cudaStream_t stream) {
  if (params.num_rows == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const long long chunks = static_cast<long long>(params.num_rows) * D * static_cast<int>(sizeof(T)) / 16;
    const int blocks = static_cast<int>(std::min<long long>((chunks + kGatherThreads - 1) / kGatherThreads, 65535));
    gather_queries<T, D><<<blocks, kGatherThreads, 0, stream>>>(params);
    check_launch("gather_queries");
  });
}

void launch_chunk_softmax(const ChunkSoftmaxParams& params, DType dtype, cudaStream_t stream) {
  const long long rows = static_cast<long long>(params.kv_heads) * params.rows;
  if (rows == 0) return;
  if (params.tokens > kMaxChunkTokens) {
    throw std::logic_error("chunk_softmax: a chunk of " + std::to_string(params.tokens) + " tokens, over kMaxChunkTokens");
  }
  dispatch_dtype(dtype, [&](auto element) {
    using T = decltype(element);
    const auto blocks = static_cast<unsigned>(rows);
    if (params.tokens <= 16 * kSoftmaxThreads) {
      chunk_softmax<T, 16><<<blocks, kSoftmaxThreads, 0, stream>>>(params);
    } else if (params.tokens <= 32 * kSoftmaxThreads) {
      chunk_softmax<T, 32><<<blocks, kSoftmaxThreads, 0, stream>>>(params);
    } else {
      chunk_softmax<T, kSoftmaxPerThread><<<blocks, kSoftmaxThreads, 0, stream>>>(params);
    }
    check_launch("chunk_softmax");
  });
}

}  // namespace hydragen::cuda
