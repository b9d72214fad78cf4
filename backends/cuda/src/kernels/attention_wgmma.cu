// The wgmma segment-attention kernel (sm_90a). scripts/check-wgmma compiles this file with
// ptxas -v and fails when ptxas serialized its wgmmas.
#include <iterator>
#include <string>

#include "dispatch.cuh"
#include "launch.hpp"
#include "segment_attention_wgmma.cuh"

namespace hydragen::cuda::detail {

void launch_wgmma(const SegmentAttentionParams& params, int blocks, int tile_tokens, int cluster, DType dtype,
                  int head_dim, cudaStream_t stream) {
  if (cluster > 1 && (blocks != params.num_items || blocks % cluster != 0 || params.worker_items != nullptr)) {
    throw std::logic_error("segment attention: clusters of " + std::to_string(cluster) + " wgmma blocks need a block per item, " +
                           std::to_string(blocks) + " blocks for " + std::to_string(params.num_items) + " items");
  }
  dispatch_16bit(dtype, head_dim, "segment attention: the wgmma kernel takes 16-bit storage", [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    auto launch = [&](auto tokens, auto leaves) {
      constexpr int KT = decltype(tokens)::value;
      constexpr bool LEAVES = decltype(leaves)::value;
      constexpr int smem = wgmma_launch_bytes<D, KT, LEAVES>();
      auto run = [&](auto clustered) {
        constexpr auto kernel = segment_attention_wgmma<T, D, KT, LEAVES, decltype(clustered)::value>;
        allow_smem<kernel>(smem);
        launch_kernel(kernel, dim3(blocks), dim3(WgmmaTile<D, KT>::kThreads), smem, stream, false, params, cluster);
      };
      if (cluster > 1) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
      check_launch("segment_attention_wgmma");
    };
    static_assert(std::size(kWgmmaTileTokens) == 2, "one case per tile");
    if (params.num_leaf_items > 0) {
      if (tile_tokens != kWgmmaTileTokens[0]) {
        throw std::logic_error("segment attention: leaf warps run beside the wgmma kernel's 128-token tile only");
      }
      return launch(std::integral_constant<int, kWgmmaTileTokens[0]>{}, std::true_type{});
    }
    if (tile_tokens == kWgmmaTileTokens[0]) return launch(std::integral_constant<int, kWgmmaTileTokens[0]>{}, std::false_type{});
    if (tile_tokens == kWgmmaTileTokens[1]) return launch(std::integral_constant<int, kWgmmaTileTokens[1]>{}, std::false_type{});
    throw std::logic_error("segment attention: the wgmma kernel has no " + std::to_string(tile_tokens) + "-token tile");
  });
}

}  // namespace hydragen::cuda::detail
