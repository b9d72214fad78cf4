#pragma once
// The plans of the schedule-driven backends, decided once: the rules (rules.hpp) in order, their
// decisions kept (PlanDecisions), then the schedule built from them. No CUDA: a plan is decided for
// any device given by its limits (the CUDA backend passes the current one's).
#include "decision.hpp"
#include "hydragen/plan_options.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

struct Planned {
  PlanDecisions decisions;
  Schedule schedule;
};

// cuda-flash: every sequence's path in items of its own; `options` resolved (narrow).
Planned plan_flash(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options, const DeviceLimits& device);
// cuda-hydragen: the segment schedule; `options` resolved (form, kernel, narrow, inline, leaves).
Planned plan_hydragen(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                      const DeviceLimits& device);
// cuda-hydragen-cublas: the shared segments as GEMM chunks, the rest as cuda-hydragen's items.
Planned plan_hydragen_cublas(const AttentionShape& shape, const SharingTree& tree, const DeviceLimits& device);

}  // namespace hydragen::cuda
