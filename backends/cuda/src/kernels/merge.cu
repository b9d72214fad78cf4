// The merge kernel's launch.
#include "dispatch.cuh"
#include "launch.hpp"
#include "merge.cuh"

namespace hydragen::cuda {

void launch_merge(const MergeParams& params, int max_partials, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream) {
  if (params.num_queries == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const bool split = max_partials > kMergeSplitAbove;
    cudaLaunchAttribute dependent{};
    dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    dependent.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(split ? params.num_queries : (params.num_queries + kMergeWarps - 1) / kMergeWarps);
    config.blockDim = dim3(kMergeWarps * 32);
    config.stream = stream;
    config.attrs = &dependent;
    config.numAttrs = overlap ? 1 : 0;
    CUDA_CHECK(split ? cudaLaunchKernelEx(&config, merge_partials<T, D, kMergeWarps>, params)
                     : cudaLaunchKernelEx(&config, merge_partials<T, D, 1>, params));
    check_launch("merge_partials");
  });
}

}  // namespace hydragen::cuda
