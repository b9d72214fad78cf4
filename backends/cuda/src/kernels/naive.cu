// The naive kernel's launch.
#include "dispatch.cuh"
#include "launch.hpp"
#include "naive.cuh"

namespace hydragen::cuda {

void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream) {
  if (num_queries == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    naive_attention<decltype(element), decltype(dim)::value><<<num_queries, kNaiveThreads, 0, stream>>>(params);
    check_launch("naive_attention");
  });
}

}  // namespace hydragen::cuda
