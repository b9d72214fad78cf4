// The mma.sync segment-attention kernels: wide (4 row warps), narrow (4 token warps) and warp (a warp per item,
// four or an SM's twelve to a block) blocks.
#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_mma.cuh"

namespace hydragen::cuda::detail {

namespace {

template <typename T, int D, int ROW_WARPS, int TOKEN_WARPS, int GROUPS, NarrowProduct PRODUCT = NarrowProduct::rows,
          int FOLD_ROUNDS = kFoldRounds>
void launch_block(const SegmentAttentionParams& params, int blocks, cudaStream_t stream, bool dependent) {
  constexpr int smem = MmaBlockTile<D, ROW_WARPS, GROUPS>::kSmemBytes;
  constexpr auto kernel = segment_attention_mma<T, D, ROW_WARPS, TOKEN_WARPS, GROUPS, PRODUCT, FOLD_ROUNDS>;
  allow_smem<kernel>(smem);
  launch_kernel(kernel, dim3(blocks), dim3(MmaBlockShape<ROW_WARPS, TOKEN_WARPS, GROUPS>::kThreads), smem, stream, dependent,
                params);
}

// A warp kernel of GROUPS warps a block, its products by rows or by tokens.
template <typename T, int D, int GROUPS>
void launch_warps(const SegmentAttentionParams& params, int blocks, NarrowProduct product, cudaStream_t stream,
                  bool dependent) {
  if (product == NarrowProduct::tokens) {
    launch_block<T, D, 1, 1, GROUPS, NarrowProduct::tokens>(params, blocks, stream, dependent);
  } else {
    launch_block<T, D, 1, 1, GROUPS>(params, blocks, stream, dependent);
  }
}

}  // namespace

void launch_mma(const SegmentAttentionParams& params, int workers, ItemKernel kernel, NarrowProduct product, DType dtype,
                int head_dim, cudaStream_t stream, bool dependent) {
  dispatch_16bit(dtype, head_dim, "segment attention: the mma.sync kernels take 16-bit storage", [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const int blocks = launch_blocks(workers, kernel);
    switch (kernel) {
      case ItemKernel::mma64: launch_block<T, D, 4, 1, 1>(params, blocks, stream, dependent); break;
      case ItemKernel::token_warps:
        if (params.merge.fold_wide_rows && params.merge.fold_rounds > kFoldRounds) {
          launch_block<T, D, 1, 4, 1, NarrowProduct::rows, kLongFoldRounds>(params, blocks, stream, dependent);
        } else {
          launch_block<T, D, 1, 4, 1>(params, blocks, stream, dependent);
        }
        break;
      case ItemKernel::item_warps: launch_warps<T, D, kItemWarps>(params, blocks, product, stream, dependent); break;
      case ItemKernel::sm_item_warps: launch_warps<T, D, kSmWarps>(params, blocks, product, stream, dependent); break;
      default: throw std::logic_error("segment attention: not an mma.sync block shape");
    }
    check_launch("segment_attention_mma");
  });
}

}  // namespace hydragen::cuda::detail
