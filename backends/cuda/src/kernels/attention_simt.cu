// The CUDA-core segment-attention kernel for fp32 storage.
#include <type_traits>

#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_simt.cuh"

namespace hydragen::cuda::detail {

void launch_simt(const SegmentAttentionParams& params, int blocks, DType dtype, int head_dim, cudaStream_t stream) {
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    if constexpr (!std::is_same_v<T, float>) {
      throw std::logic_error("segment attention: the CUDA-core kernel is for fp32 storage");
    } else {
      segment_attention_simt<T, decltype(dim)::value><<<blocks, kSimtThreads, 0, stream>>>(params);
      check_launch("segment_attention_simt");
    }
  });
}

}  // namespace hydragen::cuda::detail
