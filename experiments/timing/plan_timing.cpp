#include "timing/plan_timing.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/timing.hpp"
#endif

namespace hydragen {

namespace {

PlanTiming time_on_host(AttentionPlan& plan, const StagedProblem& staged, int replays) {
  plan.run(staged.inputs(), staged.outputs());  // warm-up: first touch, caches
  std::vector<double> ms;
  for (int i = 0; i < replays; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.run(staged.inputs(), staged.outputs());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back(), replays};
}

PlanTiming time_on_gpu([[maybe_unused]] AttentionPlan& plan, [[maybe_unused]] const StagedProblem& staged,
                       [[maybe_unused]] int replays) {
#ifdef HYDRAGEN_WITH_CUDA
  const cuda::TimingResult t = cuda::time_graph(
      [&](cudaStream_t s) { plan.run(staged.inputs(), staged.outputs(), Stream{s}); }, {3, replays, true});
  return {t.median_ms, t.min_ms, t.max_ms, t.replays};
#else
  throw std::logic_error("a CUDA backend in a build without CUDA");
#endif
}

}  // namespace

PlanTiming time_plan(const AttentionBackend& backend, AttentionPlan& plan, const StagedProblem& staged,
                     const TimingConfig& config) {
  if (config.gpu_replays < 1 || config.cpu_replays < 1) throw std::invalid_argument("time_plan: replays must be >= 1");
  if (backend.memory().name() == "cuda") return time_on_gpu(plan, staged, config.gpu_replays);
  return time_on_host(plan, staged, config.cpu_replays);
}

}  // namespace hydragen
