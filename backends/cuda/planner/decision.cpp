#include "decision.hpp"

namespace hydragen::cuda {

const char* recipe_name(LaunchRecipe recipe) {
  switch (recipe) {
    case LaunchRecipe::one_launch: return "one_launch";
    case LaunchRecipe::side_by_side: return "side_by_side";
    case LaunchRecipe::folded_leaves: return "folded_leaves";
    case LaunchRecipe::leaves_beside: return "leaves_beside";
    case LaunchRecipe::gemm_side_by_side: return "gemm_side_by_side";
  }
  return "?";
}

const char* kernel_name(ItemKernel kernel) {
  switch (kernel) {
    case ItemKernel::narrow: return "narrow";
    case ItemKernel::warps: return "warps";
    case ItemKernel::sm_warps: return "sm_warps";
    case ItemKernel::wide: return "wide";
    case ItemKernel::wgmma: return "wgmma";
  }
  return "?";
}

}  // namespace hydragen::cuda
