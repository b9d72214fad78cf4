#pragma once
// Measuring one problem on several backends: staging, planning and timing by the protocol of
// DESIGN.md section 6 (CUDA: graph replays with L2 flushed, events; CPU: steady_clock), and the
// floor from the cost model and the machine's measured peaks.
#include <string>
#include <vector>

#include "hydragen/cost_model.hpp"
#include "point.hpp"

namespace hydragen::sweep {

struct Machine {
  std::string device;  // e.g. "NVIDIA H100 80GB HBM3" or "cpu"
  Peaks peaks;         // zero when not measured
};

// Measures the GPU's peaks when `gpu` (and a GPU is present), else names the host.
Machine describe_machine(bool gpu);

struct TimingConfig {
  int gpu_replays = 50;
  int cpu_replays = 5;
  unsigned long long seed = 0;
};

// All points share one shape; the problem is generated once. A point that cannot run records
// status unsupported (with the reason) or oom, and the sweep goes on.
std::vector<Measurement> measure_shape(const std::vector<Point>& points, const Machine& machine, const TimingConfig& config);

}  // namespace hydragen::sweep
