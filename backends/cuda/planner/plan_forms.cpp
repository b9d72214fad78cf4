#include "plan_forms.hpp"

namespace hydragen::cuda {

namespace {

PlanOption narrow_option() {
  return {"narrow",
          {"auto", "blocks", "warps"},
          "the 16-row blocks' kernel (16-bit storage): blocks: four warps share each item's tiles; warps: a warp per item, "
          "four items to a block; auto: rule narrow_kernel (docs/planner-rules.md)"};
}

}  // namespace

std::vector<PlanOption> flash_options() { return {narrow_option()}; }

std::vector<PlanOptions> flash_variants() { return {PlanOptions{}, PlanOptions::parse("narrow=warps")}; }

std::vector<PlanOption> hydragen_options() {
  return {{"form",
           {"auto", "wide", "narrow"},
           "auto: one launch of 16-row blocks where that puts at most one block on each SM, else wide; wide: the "
           "shared segments in wide blocks beside 16-row leaf blocks; narrow: every segment in 16-row blocks"},
          {"kernel", {"auto", "mma"}, "the wide blocks' kernel: auto is wgmma on sm_90a and mma.sync elsewhere; mma is mma.sync everywhere"},
          narrow_option(),
          {"inline",
           {"auto", "never"},
           "auto: a segment whose readers' queries fit one 16-row block is read within each reader's own item, its path "
           "from there to the leaf, where the batch has enough such paths to keep a quarter of the SMs busy (rule "
           "inline_paths); never: every segment in items of its own"},
          {"leaves",
           {"auto", "after", "beside"},
           "where a wgmma launch and leaves both run: after, the leaves on the SMs the wgmma launch frees; beside, the "
           "shared segments' parts on fewer persistent wgmma blocks and the leaves, a warp each, on the other SMs from "
           "the start; auto: beside where rule leaf_layout's cost model predicts it faster"}};
}

std::vector<PlanOptions> hydragen_variants() {
  return {PlanOptions{}, PlanOptions::parse("form=wide"), PlanOptions::parse("form=narrow"),
          PlanOptions::parse("form=narrow:narrow=warps"), PlanOptions::parse("form=wide:kernel=mma"),
          PlanOptions::parse("form=wide:leaves=beside"), PlanOptions::parse("inline=never")};
}

}  // namespace hydragen::cuda
