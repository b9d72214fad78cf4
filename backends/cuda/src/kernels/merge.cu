// The merge kernel's launch.
#include "dispatch.cuh"
#include "launch.hpp"
#include "merge.cuh"

namespace hydragen::cuda {

void launch_merge(const MergeParams& params, int warps, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream) {
  if (params.num_queries == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const bool split = warps > 1;
    const dim3 grid(split ? params.num_queries : (params.num_queries + kMergeWarps - 1) / kMergeWarps);
    launch_kernel(split ? merge_partials<T, D, kMergeWarps> : merge_partials<T, D, 1>, grid, dim3(kMergeWarps * 32), 0,
                  stream, overlap, params);
    check_launch("merge_partials");
  });
}

}  // namespace hydragen::cuda
