#include "plan_forms.hpp"

namespace hydragen::cuda {

namespace {

PlanOption narrow_kernel_option() {
  return {"narrow_kernel",
          {"auto", "token_warps", "item_warps"},
          "the kernel of the narrow items (at most 16 rows; 16-bit storage, fp32 has CUDA-core blocks only): token_warps, "
          "four warps share each item's tiles; item_warps, a warp per item, four items to a block; auto: rule "
          "narrow_kernel (docs/planner-rules.md)"};
}

}  // namespace

std::vector<PlanOption> flash_options() { return {narrow_kernel_option()}; }

std::vector<PlanOptions> flash_variants() { return {PlanOptions{}, PlanOptions::parse("narrow_kernel=item_warps")}; }

std::vector<PlanOption> hydragen_options() {
  return {{"form",
           {"auto", "wide", "narrow"},
           "auto: one launch of narrow items where that puts at most one block on each SM, else wide; wide: the "
           "shared segments in wide items beside narrow leaf items; narrow: every segment in narrow items (16 rows)"},
          {"wide_kernel",
           {"auto", "mma64"},
           "the kernel of the wide items: auto, wgmma (128 rows) on sm_90a and mma64 (64-row mma.sync blocks) elsewhere; "
           "mma64 everywhere"},
          narrow_kernel_option(),
          {"narrow_workers",
           {"auto", "items", "resident"},
           "the narrow launch's workers (mma.sync kernels; beside, whole-SM leaf warps fill their SMs whatever this "
           "says): items, one per item; resident, persistent workers, as many as are resident, each a contiguous run "
           "of items; auto: rule launch_workers"},
          {"narrow_product",
           {"auto", "rows", "tokens"},
           "how the warp kernels' mma.sync products lay out a narrow item: rows, its rows on the product's 16-row side; "
           "tokens, 16 tokens there and its rows (at most 8) on the 8 columns, O^T in a quarter of the registers (items "
           "of more rows, or other kernels, keep rows); auto: rule narrow_product (tokens where the leaves do not fold)"},
          {"inline",
           {"auto", "never"},
           "auto: a segment whose readers' queries fit one 16-row block is read within each reader's own item, its path "
           "from there to the leaf, where the batch has enough such paths to keep a quarter of the SMs busy (rule "
           "inline_paths); never: every segment in items of its own"},
          {"wide_tile",
           {"auto", "128", "192"},
           "the wgmma kernel's K/V tile in tokens: 192 amortizes each turn's hand-off over more work, 128 keeps short "
           "split parts short; auto: rule wide_tile (docs/planner-rules.md)"},
          {"wide_parts",
           {"auto", "1", "2", "4", "8", "16", "32"},
           "cut each wide row block into this many parts by tokens (fewer where a part would be under 256 tokens), "
           "whatever the waves, and keep the leaves after (with leaves=beside: the beside layout's parts); auto: rule "
           "wide_target_blocks"},
          {"leaves",
           {"auto", "after", "beside", "inside"},
           "where a wgmma launch and leaves both run: after, the leaves on the SMs the wgmma launch frees; beside, the "
           "shared segments' parts on fewer persistent wgmma blocks and the leaves, a warp each, on the other SMs from "
           "the start; inside, the leaves in three warps of every wgmma block (leaves of at most 8 rows; 128-token "
           "tiles), the merge after; auto: beside where rule leaf_layout's cost model predicts it faster"},
          {"leaf_sms",
           {"auto", "8", "16", "24", "32", "40", "48", "64", "96"},
           "with leaves=beside only: the leaves on this many SMs, the wgmma launch's parts and persistent blocks as the "
           "cost model fits them to the rest (with wide_parts: those parts); a knob for measuring the layout; auto: as "
           "rule leaf_layout sizes it"},
          {"part_merge",
           {"auto", "kernel", "cluster"},
           "where a wgmma launch's split row blocks combine their parts: kernel, each part writes fp32 rows that the "
           "merge kernel (or a folding leaf) combines; cluster, a block's parts run as one thread-block cluster that "
           "combines them through distributed shared memory (every wide block cut into the same 2, 4 or 8 parts, a "
           "block per item; elsewhere kernel, and --explain says why); auto: rule part_merge"},
          {"leaf_launch",
           {"auto", "chained", "stream"},
           "how leaves beside or after a wgmma launch that they do not fold are launched: chained, as its dependent "
           "launch (its blocks placed first, the last leaf worker waiting for it); stream, on a second stream (beside: "
           "launched first), joined before the merge; auto: rule chain_leaves"},
          {"merge_launch",
           {"auto", "stream", "dependent"},
           "how the merge kernel follows the attention launch that ends last (one launch, or leaves chained after the "
           "wgmma launch): stream, in stream order; dependent, as its programmatic dependent (sm_90), the merge's "
           "blocks reading the plan's row tables while it ends; after a second stream's launch always stream; auto: "
           "rule overlap_merge"},
          {"tune",
           {"model", "measure"},
           "model: the rules decide the plan (their cost models); measure: the plan times the model's plan and the "
           "others the options left to auto allow (form, leaves, beside's leaf SMs) on random tensors of the problem on the GPU, "
           "and keeps the fastest (the model's unless another is 2% faster), remembered for the process per device, "
           "problem and options; rule tune says what was timed (docs/planner-rules.md)"},
          {"leaf_l2",
           {"auto", "normal", "evict_first"},
           "the L2 priority of the narrow items' K/V copies: normal; evict_first, their lines evicted before the wgmma "
           "launch's K/V (kept last) and the partial rows (only where no other row block reads them); auto: rule "
           "leaf_evict_first"}};
}

std::vector<PlanOptions> hydragen_variants() {
  return {PlanOptions{}, PlanOptions::parse("form=wide"), PlanOptions::parse("form=narrow"),
          PlanOptions::parse("form=narrow:narrow_kernel=item_warps"), PlanOptions::parse("form=wide:wide_kernel=mma64"),
          PlanOptions::parse("form=wide:leaves=beside"),
          PlanOptions::parse("form=wide:leaves=beside:leaf_launch=stream"), PlanOptions::parse("form=wide:leaf_launch=stream"), PlanOptions::parse("form=wide:wide_tile=192"),
          PlanOptions::parse("form=wide:wide_parts=2"), PlanOptions::parse("narrow_workers=resident"),
          PlanOptions::parse("narrow_kernel=item_warps:narrow_product=tokens"), PlanOptions::parse("narrow_product=rows"),
          PlanOptions::parse("form=wide:leaves=beside:narrow_product=tokens"), PlanOptions::parse("form=wide:leaves=inside"),
          PlanOptions::parse("form=wide:wide_parts=2:part_merge=cluster"),
          PlanOptions::parse("form=wide:leaves=inside:part_merge=cluster"),
          PlanOptions::parse("inline=never"), PlanOptions::parse("form=wide:merge_launch=stream:leaf_l2=normal"),
          PlanOptions::parse("tune=measure")};
}

}  // namespace hydragen::cuda
