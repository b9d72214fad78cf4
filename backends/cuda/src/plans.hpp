#pragma once
// The CUDA plans' factories (the registry's plan functions, cuda_backends.cpp).
#include <cstddef>
#include <memory>
#include <vector>

#include "hydragen/attention.hpp"
#include "plan_forms.hpp"  // the options and variants of cuda-flash and cuda-hydragen
#include "planner.hpp"

namespace hydragen::cuda {

// cuda-naive: one block per query row, scores materialized in a [queries, max path] workspace.
std::unique_ptr<AttentionPlan> make_naive_plan(const AttentionShape& shape, const SharingTree& tree);
// cuda-flash: flat schedule (per sequence over its path, split-KV), tensor-core tiles, merge; the
// narrow items' kernel as its options choose (flash_options).
std::unique_ptr<AttentionPlan> make_flash_plan(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options);
// cuda-hydragen: segment schedule (per segment, the queries of every sequence below it), the same
// kernels, in the form and with the kernel its options choose (hydragen_options).
std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree,
                                                  const PlanOptions& options);
// cuda-hydragen-cublas: the shared segments as cuBLAS products (gemm_attention.hpp), the others on
// the fused kernel, then the same merge.
std::unique_ptr<AttentionPlan> make_hydragen_cublas_plan(const AttentionShape& shape, const SharingTree& tree);

// The plan that runs `planned` as decided (its decisions by the planner, or set by hand: calibrate.cpp).
std::unique_ptr<AttentionPlan> make_segment_plan(const AttentionShape& shape, const SharingTree& tree, const Planned& planned);

// What make_segment_plan allocates on the device for `planned`.
std::size_t segment_plan_bytes(const AttentionShape& shape, const SharingTree& tree, const Planned& planned);

// The current device's limits with the rates plans use on it (calibrate.hpp: resolve_device_rates).
DeviceLimits planning_device();

// The device bytes each plan allocates (AttentionBackend::workspace_bytes), from the same schedule.
std::size_t naive_workspace_bytes(const AttentionShape& shape, const SharingTree& tree);
std::size_t flash_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options);
std::size_t hydragen_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options);
std::size_t hydragen_cublas_workspace_bytes(const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen::cuda
