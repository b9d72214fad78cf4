// The wgmma segment-attention kernel (sm_90a). scripts/check-wgmma compiles this file with
// ptxas -v and fails when ptxas serialized its wgmmas.
#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_wgmma.cuh"

namespace hydragen::cuda::detail {

void launch_wgmma(const SegmentAttentionParams& params, int blocks, DType dtype, int head_dim, cudaStream_t stream) {
  dispatch_16bit(dtype, head_dim, "segment attention: the wgmma kernel takes 16-bit storage", [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    constexpr int smem = WgmmaSharedStorage<D>::kLaunchBytes;
    allow_smem<segment_attention_wgmma<T, D>>(smem);
    segment_attention_wgmma<T, D><<<blocks, WgmmaTile<D>::kThreads, smem, stream>>>(params);
    check_launch("segment_attention_wgmma");
  });
}

}  // namespace hydragen::cuda::detail
