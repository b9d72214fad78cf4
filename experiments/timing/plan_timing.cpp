#include "timing/plan_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
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
  cuda::TimingOptions options{3, replays, true, {}};
  // EXPERIMENT (perf-notes v48): HYDRAGEN_TLB_TOUCH=STRIDE touches the problem's tensors every STRIDE
  // bytes after each flush, so that their translations are warm while L2 is cold.
  if (const char* touch = std::getenv("HYDRAGEN_TLB_TOUCH")) {
    const std::size_t stride = std::strtoull(touch, nullptr, 10);
    options.after_flush = [&staged, stride](cudaStream_t s) {
      const auto bytes = [](std::size_t numel, DType dtype) { return numel * dtype_size(dtype); };
      const AttentionInputs& in = staged.inputs();
      cuda::touch_pages(in.q.data, bytes(in.q.numel, in.q.dtype), stride, s);
      for (const auto* list : {&in.k, &in.v}) {
        for (const ConstTensor& t : *list) cuda::touch_pages(t.data, bytes(t.numel, t.dtype), stride, s);
      }
      const AttentionOutputs& out = staged.outputs();
      cuda::touch_pages(out.o.data, bytes(out.o.numel, out.o.dtype), stride, s);
      cuda::touch_pages(out.lse.data, bytes(out.lse.numel, out.lse.dtype), stride, s);
    };
  }
  const cuda::TimingResult t = cuda::time_graph(
      [&](cudaStream_t s) { plan.run(staged.inputs(), staged.outputs(), Stream{s}); }, options);
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
