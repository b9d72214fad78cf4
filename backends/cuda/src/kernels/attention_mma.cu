// The mma.sync segment-attention kernels: wide (4 row warps) and narrow (4 token warps) blocks.
#include <type_traits>

#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_mma.cuh"

namespace hydragen::cuda::detail {

void launch_mma(const SegmentAttentionParams& params, int grid, bool wide, DType dtype, int head_dim, cudaStream_t stream) {
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    if constexpr (std::is_same_v<T, float>) {
      throw std::logic_error("segment attention: the mma.sync kernels take 16-bit storage");
    } else {
      if (wide) {
        constexpr int smem = MmaTile<D, false>::kSmemBytes;
        allow_smem<segment_attention_mma<T, D, 4, 1>>(smem);
        segment_attention_mma<T, D, 4, 1><<<grid, kMmaThreads, smem, stream>>>(params);
      } else {
        constexpr int smem = MmaTile<D, true>::kSmemBytes;
        allow_smem<segment_attention_mma<T, D, 1, 4>>(smem);
        segment_attention_mma<T, D, 1, 4><<<grid, kMmaThreads, smem, stream>>>(params);
      }
      check_launch("segment_attention_mma");
    }
  });
}

}  // namespace hydragen::cuda::detail
