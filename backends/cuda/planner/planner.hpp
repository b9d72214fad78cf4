#pragma once
// The plans of the schedule-driven backends, decided once: the rules (rules.hpp) in order, their
// decisions kept (PlanDecisions), then the schedule built from them. No CUDA: a plan is decided for
// any device given by its limits (the CUDA backend passes the current one's).
#include <string>
#include <vector>

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
// cuda-hydragen: the segment schedule; `options` resolved (form, kernel, narrow, inline, leaves). With
// tune=measure, the model's plan, its log ending in rule tune's list of the plans a GPU would time.
Planned plan_hydragen(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                      const DeviceLimits& device);

// tune=measure: the plans a measurement on the device chooses among (the CUDA backend times them when
// it plans). The model's plan first; then, for each option the caller left to auto, the others it
// allows: form wide and narrow; leaves after, beside and inside; beside's leaf SMs at the option's two
// values either side of the model's sizing. A set of options the rules refuse here is left out, and
// so is a plan that runs as one already listed (runs_alike).
struct TuneCandidate {
  std::string label;     // "model", or the options it sets beyond the caller's ("leaves=beside:leaf_sms=24")
  PlanOptions options;   // resolved, with tune=model: what plan_hydragen plans it from
  Planned planned;
};
std::vector<TuneCandidate> tune_candidates(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                                           const DeviceLimits& device);
// Rule tune's decision before any measurement: "measure (N plans)" and their labels.
Decision tune_decision(const std::vector<TuneCandidate>& candidates);
// cuda-hydragen-cublas: the shared segments as GEMM chunks, the rest as cuda-hydragen's items.
Planned plan_hydragen_cublas(const AttentionShape& shape, const SharingTree& tree, const DeviceLimits& device);

}  // namespace hydragen::cuda
