#pragma once
// cuda-hydragen's tune=measure: the plan chosen by timing the planner's candidates (planner.hpp:
// tune_candidates) on the GPU, where the rules' cost models choose by prediction.
#include <cstddef>
#include <memory>

#include "hydragen/attention.hpp"

namespace hydragen::cuda {

// Times each candidate's run on random tensors of the problem (captured as a CUDA graph, L2
// flushed before each replay, the plans in turns) and keeps the fastest; the model's plan is kept
// unless another is kKeepModel faster. The choice is remembered for the process per device, problem
// and options, so a later plan of the same problem times nothing. Its decisions are the kept plan's,
// then rule tune's with every candidate's median. `options` resolved, with tune=measure.
std::unique_ptr<AttentionPlan> make_measured_plan(const AttentionShape& shape, const SharingTree& tree,
                                                  const PlanOptions& options);
// What make_measured_plan allocates at its peak: every candidate plan, the scratch tensors and the
// L2 flush's buffer (a remembered choice: its plan alone).
std::size_t measured_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options);

}  // namespace hydragen::cuda
