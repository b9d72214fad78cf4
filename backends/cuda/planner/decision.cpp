#include "decision.hpp"

#include <tuple>

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

namespace {
auto fields(const BuildChoices& b) {
  return std::tie(b.max_rows, b.narrow_parts, b.wide_target_blocks, b.wide_workers, b.max_chunk_scores, b.wide_cluster,
                  b.cluster_leaves);
}
auto fields(const LaunchChoices& l) {
  return std::tie(l.narrow_workers, l.wide_workers, l.narrow_product, l.fold_rounds, l.run_merge, l.overlap_merge,
                  l.merge_warps, l.wide_tile_tokens, l.chain_leaves, l.leaf_evict_first);
}
}  // namespace

bool runs_alike(const PlanDecisions& a, const PlanDecisions& b) {
  return std::tie(a.wide_kernel, a.narrow_kernel, a.inline_paths, a.leaf_sms, a.leaves_inside, a.recipe) ==
             std::tie(b.wide_kernel, b.narrow_kernel, b.inline_paths, b.leaf_sms, b.leaves_inside, b.recipe) &&
         fields(a.build) == fields(b.build) && fields(a.launches) == fields(b.launches);
}

}  // namespace hydragen::cuda
