#pragma once
// hydragen-diff --explain: how a backend's plan for the options' problem decided to run, one
// decision a line (AttentionPlan::decisions; docs/planner-rules.md names the CUDA planner's rules).
#include <string>

#include "diff/options.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {

// The backend plans the problem here (a CUDA backend on this machine's GPU) and its decisions are
// listed; a plan that decides nothing says so. A tree detected in --tokens is preceded by the rates
// detection weighed the partials at. With options.explain_device, the CUDA planner decides
// for the described device instead (cuda-flash, cuda-hydragen, cuda-hydragen-cublas), no GPU needed.
// Throws std::invalid_argument for a malformed --explain-device or a backend the planner does not plan.
std::string explain_text(const Options& options, const BackendRegistry& registry);

}  // namespace hydragen::diff
