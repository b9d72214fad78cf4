#include "measure.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "hydragen/backends.hpp"
#include "hydragen/errors.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/memory.hpp"
#include "hydragen/cuda/timing.hpp"
#endif

namespace hydragen::sweep {

namespace {

AttentionShape shape_of(const Point& p) {
  return make_shape(p.batch, p.q_len, p.q_heads, p.kv_heads, p.head_dim, p.dtype);
}
SharingTree tree_of(const Point& p) { return SharingTree::prefix_suffix(p.prefix, std::vector<int>(p.batch, p.suffix)); }

void time_on_host(AttentionPlan& plan, const StagedProblem& staged, int replays, Measurement& m) {
  plan.run(staged.inputs(), staged.outputs());  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < replays; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.run(staged.inputs(), staged.outputs());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  m.median_ms = ms[ms.size() / 2];
  m.min_ms = ms.front();
  m.max_ms = ms.back();
}

Measurement measure_one(const Point& point, const Problem& problem, const Machine& machine, const TimingConfig& config) {
  Measurement m;
  const AttentionBackend& b = backend(point.backend);
  // The floor is the problem's, whatever the storage: each distinct K/V byte once.
  const CostEstimate cost = estimate_cost(problem.shape, problem.tree);
  m.flops = cost.flops;
  m.bytes = cost.floor_bytes;
  if (machine.peaks.flops_per_s > 0 && b.memory().name() == "cuda") {
    m.floor_ms = roofline_seconds(m.flops, m.bytes, machine.peaks) * 1e3;
  }
  if (const std::string why = b.memory().unavailable_reason(); !why.empty()) {
    return Measurement{"unsupported", why, 0, 0, 0, m.flops, m.bytes, m.floor_ms};
  }
  const SharingTree planned = point.storage == Storage::shared ? problem.tree : problem.tree.flattened();
  if (const Support s = b.supports(problem.shape, planned); !s.ok) {
    return Measurement{"unsupported", s.reason, 0, 0, 0, m.flops, m.bytes, m.floor_ms};
  }
  try {
    const StagedProblem staged(b.memory(), problem, point.storage);
    const auto plan = b.plan(staged.shape(), staged.tree());
    if (b.memory().name() == "cuda") {
#ifdef HYDRAGEN_WITH_CUDA
      const cuda::TimingResult t = cuda::time_graph(
          [&](cudaStream_t s) { plan->run(staged.inputs(), staged.outputs(), Stream{s}); }, {3, config.gpu_replays, true});
      m.median_ms = t.median_ms;
      m.min_ms = t.min_ms;
      m.max_ms = t.max_ms;
#endif
    } else {
      time_on_host(*plan, staged, config.cpu_replays, m);
    }
  } catch (const OutOfMemory& e) {
    m.status = "oom";
    m.detail = e.what();
  } catch (const std::exception& e) {
    m.status = "error";
    m.detail = e.what();
  }
  return m;
}

}  // namespace

Machine describe_machine(bool gpu) {
#ifdef HYDRAGEN_WITH_CUDA
  if (gpu && cuda::device_memory().unavailable_reason().empty()) {
    return Machine{cuda::query_device().name, cuda::measure_peaks()};
  }
#endif
  (void)gpu;
  return Machine{"cpu", Peaks{}};
}

std::vector<Measurement> measure_shape(const std::vector<Point>& points, const Machine& machine, const TimingConfig& config) {
  std::vector<Measurement> out;
  if (points.empty()) return out;
  std::unique_ptr<Problem> problem;
  try {
    problem = std::make_unique<Problem>(make_problem(shape_of(points.front()), tree_of(points.front()), config.seed));
  } catch (const std::invalid_argument& e) {
    for (std::size_t i = 0; i < points.size(); ++i) out.push_back(Measurement{"unsupported", e.what()});
    return out;
  }
  for (const Point& p : points) out.push_back(measure_one(p, *problem, machine, config));
  return out;
}

}  // namespace hydragen::sweep
