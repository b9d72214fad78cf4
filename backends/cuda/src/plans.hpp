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
// cuda-hydragen: segment schedule (per segment, the queries of every sequence below it), same kernels;
// the shared segments' 128-row blocks on wgmma where the device is sm_90.
std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-hydragen-mma: the same with the mma.sync 64-row blocks on every device (sm_80 path, for comparison).
std::unique_ptr<AttentionPlan> make_hydragen_mma_plan(const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen::cuda
