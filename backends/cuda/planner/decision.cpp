#include "decision.hpp"

namespace hydragen::cuda {

const char* recipe_name(LaunchRecipe recipe) {
  switch (recipe) {
    case LaunchRecipe::one_launch: return "one_launch";
    case LaunchRecipe::side_by_side: return "side_by_side";
    case LaunchRecipe::folded_leaves: return "folded_leaves";
    case LaunchRecipe::leaves_beside: return "leaves_beside";
    case LaunchRecipe::gemm_side_by_side: return "gemm_side_by_side";
    case LaunchRecipe::chained_leaves: return "chained_leaves";
    case LaunchRecipe::leaves_inside: return "leaves_inside";
  }
  return "?";
}

const char* kernel_name(ItemKernel kernel) {
  switch (kernel) {
    case ItemKernel::simt: return "simt";
    case ItemKernel::token_warps: return "token_warps";
    case ItemKernel::item_warps: return "item_warps";
    case ItemKernel::sm_item_warps: return "sm_item_warps";
    case ItemKernel::mma64: return "mma64";
    case ItemKernel::wgmma: return "wgmma";
  }
  return "?";
}

}  // namespace hydragen::cuda
