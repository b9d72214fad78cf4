#pragma once
// The one timing protocol of the tools (DESIGN.md section 6), so that hydragen-sweep and
// hydragen-bench report the same number for the same plan. On a GPU: CUDA graph replays of run()
// timed with events, L2 flushed before each outside the timed region (cuda::time_graph). On the
// host: steady_clock around runs after a warm-up. Median, min and max.
#include "hydragen/attention.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {

struct TimingConfig {
  int gpu_replays = 50;  // timed graph replays of a plan on a GPU
  int cpu_replays = 5;   // timed runs of a plan on the host
};

struct PlanTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int replays = 0;
};

// `plan` is one of `backend`'s plans and `staged` lives in `backend`'s memory. Throws
// std::invalid_argument for a replay count below 1.
PlanTiming time_plan(const AttentionBackend& backend, AttentionPlan& plan, const StagedProblem& staged,
                     const TimingConfig& config);

}  // namespace hydragen
