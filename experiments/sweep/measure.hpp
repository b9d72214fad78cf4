#pragma once
// Measuring one problem on several backends: staging, planning and timing by the protocol of
// DESIGN.md section 6 (timing/plan_timing.hpp), and the floor from the cost model and the peaks
// measured in the same run.
#include <functional>
#include <string>
#include <vector>

#include "hydragen/cost_model.hpp"
#include "point.hpp"
#include "timing/plan_timing.hpp"

namespace hydragen::sweep {

// The devices a sweep runs on, with their measured ceilings (zero where not measured).
struct Machine {
  std::string gpu;  // e.g. "NVIDIA H100 80GB HBM3"; empty without one
  Peaks gpu_peaks;
  std::string host;  // e.g. "AMD EPYC (2 threads)"
  Peaks host_peaks;
  // What detection (--tokens) weighs partials at: the GPU's rates where the sweep runs on one (its
  // tree is the same for every backend), else the rate-free ones.
  SharingRates sharing;
};

// Measures the peaks of the devices the listed backends run on, and takes the GPU's sharing rates.
Machine describe_machine(const std::vector<std::string>& backends);

// The protocol's replay counts (--replays, --cpu-replays) and the seed of the inputs (--seed).
struct TimingConfig : hydragen::TimingConfig {
  unsigned long long seed = 0;
};

// All points share one shape; the problem is generated once. A point that cannot run is recorded
// (unsupported with the reason, oom, or error) and the sweep goes on. Each row is handed to
// `on_row` as soon as it is measured (so a killed sweep keeps it), then all are returned.
std::vector<Row> measure_shape(const std::vector<Point>& points, const Machine& machine, const TimingConfig& config,
                               const std::string& commit, const std::function<void(const Row&)>& on_row = {});

}  // namespace hydragen::sweep
