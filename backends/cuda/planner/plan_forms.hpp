#pragma once
// The plan options of cuda-flash and cuda-hydragen (plan_options.hpp: the first value is the
// default), which the planner's rules read, and the forms the test harness and the golden table of
// decisions cover.
#include <vector>

#include "hydragen/plan_options.hpp"

namespace hydragen::cuda {

std::vector<PlanOption> flash_options();
std::vector<PlanOptions> flash_variants();
std::vector<PlanOption> hydragen_options();
std::vector<PlanOptions> hydragen_variants();

}  // namespace hydragen::cuda
