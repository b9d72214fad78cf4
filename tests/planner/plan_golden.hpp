#pragma once
// The golden table of the CUDA planner's decisions: for every point of every sweep preset and every
// harness case, under every plan form the harness covers and for two devices (an H100's limits, an
// A100's), one line with what the plan decided and a hash of the whole schedule. The table was
// written before the planner moved into its rules (issue 40) and must not change unless a rule does.
#include <string>
#include <vector>

namespace hydragen::cuda::golden {

struct Line {
  std::string key;      // backend[:options] | problem | device
  std::string decided;  // kernels, workers, fold, merge, item counts, schedule hash
};

// Every line, in a fixed order.
std::vector<Line> plan_lines();

}  // namespace hydragen::cuda::golden
