#pragma once
// A plan's decisions: each rule that fired (rules.hpp), with its inputs, its choice and why, and the
// record the plan runs from. A plan computes it once (planner.hpp); building the schedule and the
// launches only read it. --explain prints it (hydragen-diff --explain, the sweep's `decisions`
// column, plan.explain() in Python).
#include <optional>
#include <string>
#include <vector>

#include "device_limits.hpp"
#include "device_rates.hpp"
#include "hydragen/attention.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

// One rule's decision (docs/planner-rules.md has an entry under each rule's name).
using Decision = PlanDecision;

// How a plan's launches run: a closed set, one short function each (segment_plan.cpp).
enum class LaunchRecipe {
  one_launch,         // one kind of items, then the merge if some query needs it
  side_by_side,       // the wide items on the caller's stream, the narrow ones on a side stream, the merge after both
  folded_leaves,      // the wide items, then the narrow ones as their dependent launch doing the merge; no merge kernel
  leaves_beside,      // the narrow items first on SMs of their own (a side stream), persistent wgmma blocks on the rest,
                      // the merge after both
  gemm_side_by_side,  // cuBLAS products of the shared segments beside the narrow items, the merge after both
  chained_leaves,     // the wide items, then the narrow ones as their dependent launch (the wide blocks placed
                      // first; beside, on the SMs they leave), whose last worker to finish waits for the wide
                      // launch; the merge after both
  leaves_inside,      // one wgmma launch whose blocks' leaf warps run the narrow items (kWgmmaLeafWarps), the merge after
};
const char* recipe_name(LaunchRecipe recipe);

// What building the schedule takes (schedule.hpp: build): it decides nothing itself.
struct BuildChoices {
  int max_rows = 0;                 // largest row block: kNarrowRows, kMma64Rows or kWgmmaRows
  long long narrow_parts = 1;       // parts per narrow block (split-KV), split_count'ed per block
  long long wide_target_blocks = 0;  // the wide launch's blocks: each wide block its share by tokens
  int wide_workers = 0;             // > 0: persistent wgmma blocks the wide items are dealt to; 0: a block per item
  long long max_chunk_scores = 0;   // cuda-hydragen-cublas: the most scores of one GEMM chunk; 0: no GEMM chunks
  int wide_cluster = 1;             // > 1: every wide block's parts (that many) share its rows and run as one cluster
                                    // of wgmma blocks, which combines them (rule part_merge); 1: rows per part
  bool cluster_leaves = false;      // with wide_cluster and leaves inside: Schedule::cluster_leaf_items
};

// How the launches of a built schedule run.
struct LaunchChoices {
  int narrow_workers = 0, wide_workers = 0;  // of each launch: one per item, or fewer persistent ones
  NarrowProduct narrow_product = NarrowProduct::rows;  // the warp kernels' product layout (rule narrow_product)
  int fold_rounds = 0;                       // the most rows a folding leaf's lane folds, 0 where none does (rule
                                             // fold_leaves; MergeParams::fold_rounds)
  bool run_merge = false;                    // some query needs the merge kernel
  bool overlap_merge = false;                // the merge starts as the one attention launch before it ends
  int merge_warps = 1;                       // warps per query of the merge kernel
  int wide_tile_tokens = kWgmmaTileTokens[0];  // the wgmma kernel's K/V tile (rule wide_tile)
  bool chain_leaves = false;                 // the leaves as the wide launch's dependent launch (rule chain_leaves)
  bool leaf_evict_first = false;             // the narrow items' K/V copies evicted from L2 first (rule leaf_evict_first)
  // The narrow launch does the merge (MergeParams::fold_wide_rows); leaves inside a cluster launch: its
  // combine folds their rows.
  bool folds() const { return fold_rounds > 0; }
};

struct PlanDecisions {
  ItemKernel wide_kernel = ItemKernel::simt, narrow_kernel = ItemKernel::simt;
  bool inline_paths = false;  // segments of few readers read within each reader's path (rules.hpp: inline_paths)
  BuildChoices build;
  int leaf_sms = 0;  // > 0: the narrow items on that many SMs of their own (LaunchRecipe::leaves_beside)
  bool leaves_inside = false;  // the narrow items in the wgmma blocks' leaf warps (LaunchRecipe::leaves_inside)
  LaunchChoices launches;
  LaunchRecipe recipe = LaunchRecipe::one_launch;
  DeviceLimits device;
  std::optional<DeviceRates> rates;  // device-rates.csv's for the device; none where it has no row
  std::vector<Decision> log;  // the device first (its limits, the rates' source), then every rule that fired, in order
};

const char* kernel_name(ItemKernel kernel);

// Whether two plans' decisions build the same schedule and launch it alike (tune=measure times each
// distinct plan once): every choice but the log and the rates.
bool runs_alike(const PlanDecisions& a, const PlanDecisions& b);

}  // namespace hydragen::cuda
