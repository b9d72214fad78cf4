#pragma once
// The CUDA plans. plan() uploads the schedule and allocates every workspace; run() binds the input
// pointers and launches, nothing else, so it can be captured in a CUDA graph.
#include <memory>

#include "hydragen/attention.hpp"

namespace hydragen::cuda {

// cuda-naive: one block per query row, scores materialized in a [queries, max path] workspace.
std::unique_ptr<AttentionPlan> make_naive_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-flash: flat schedule (per sequence over its path, split-KV), tensor-core tiles, merge.
std::unique_ptr<AttentionPlan> make_flash_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-hydragen: segment schedule (per segment, the queries of every sequence below it), same kernels:
// one launch of narrow blocks for small problems, else the shared segments' wide blocks (128-row
// wgmma where the device is sm_90) beside the leaves (hydragen_schedule, schedule.hpp).
std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-hydragen-wide: always the wide form (for comparison, and so the tests cover it on small problems).
std::unique_ptr<AttentionPlan> make_hydragen_wide_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-hydragen-mma: the wide form with the mma.sync 64-row blocks on every device (the sm_80 kernel).
std::unique_ptr<AttentionPlan> make_hydragen_mma_plan(const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen::cuda
