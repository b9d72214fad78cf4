// The mma.sync segment-attention kernels: wide (4 row warps), narrow (4 token warps) and warp (a warp per item,
// four or an SM's twelve to a block) blocks.
#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_mma.cuh"

namespace hydragen::cuda::detail {

namespace {

template <typename T, int D, int ROW_WARPS, int TOKEN_WARPS, int GROUPS>
void launch_block(const SegmentAttentionParams& params, int blocks, cudaStream_t stream, bool dependent) {
  constexpr int smem = MmaBlockTile<D, ROW_WARPS, GROUPS>::kSmemBytes;
  allow_smem<segment_attention_mma<T, D, ROW_WARPS, TOKEN_WARPS, GROUPS>>(smem);
  launch_kernel(segment_attention_mma<T, D, ROW_WARPS, TOKEN_WARPS, GROUPS>, dim3(blocks),
                dim3(MmaBlockShape<ROW_WARPS, TOKEN_WARPS, GROUPS>::kThreads), smem, stream, dependent, params);
}

}  // namespace

void launch_mma(const SegmentAttentionParams& params, int workers, ItemKernel kernel, DType dtype, int head_dim,
                cudaStream_t stream, bool dependent) {
  dispatch_16bit(dtype, head_dim, "segment attention: the mma.sync kernels take 16-bit storage", [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const int blocks = launch_blocks(workers, kernel);
    switch (kernel) {
      case ItemKernel::mma64: launch_block<T, D, 4, 1, 1>(params, blocks, stream, dependent); break;
      case ItemKernel::token_warps: launch_block<T, D, 1, 4, 1>(params, blocks, stream, dependent); break;
      case ItemKernel::item_warps: launch_block<T, D, 1, 1, kItemWarps>(params, blocks, stream, dependent); break;
      case ItemKernel::sm_item_warps: launch_block<T, D, 1, 1, kSmWarps>(params, blocks, stream, dependent); break;
      default: throw std::logic_error("segment attention: not an mma.sync block shape");
    }
    check_launch("segment_attention_mma");
  });
}

}  // namespace hydragen::cuda::detail
