#include "measure.hpp"

#include <memory>
#include <stdexcept>

#include "hydragen/backends.hpp"
#include "hydragen/cpu/peaks.hpp"
#include "hydragen/errors.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/memory.hpp"
#include "hydragen/cuda/timing.hpp"
#endif

namespace hydragen::sweep {

namespace {

bool on_gpu(const AttentionBackend& b) { return b.memory().name() == "cuda"; }

// The staged problems of one shape, shared by the backends that read the same memory with the same
// storage (generating and copying a large point costs more than timing it).
class StageCache {
 public:
  explicit StageCache(const ProblemSpec& spec) : spec_(spec) {}
  const StagedProblem& get(const DeviceMemory& memory, Storage storage) {
    for (const Entry& e : entries_) {
      if (e.memory == &memory && e.storage == storage) return *e.staged;
    }
    entries_.push_back(Entry{&memory, storage, std::make_unique<StagedProblem>(memory, spec_, storage)});
    return *entries_.back().staged;
  }

 private:
  struct Entry {
    const DeviceMemory* memory;
    Storage storage;
    std::unique_ptr<StagedProblem> staged;
  };
  const ProblemSpec& spec_;
  std::vector<Entry> entries_;
};

Measurement measure_one(const Point& point, const ProblemSpec& problem, StageCache& cache, const Machine& machine,
                        const TimingConfig& config) {
  Measurement m;
  const AttentionBackend& b = backend(point.backend);
  // The floor is the problem's, whatever the storage: each distinct K/V byte once.
  const CostEstimate cost = estimate_cost(problem.shape, problem.tree);
  m.flops = cost.flops;
  m.bytes = cost.floor_bytes;
  const Peaks& peaks = on_gpu(b) ? machine.gpu_peaks : machine.host_peaks;
  if (peaks.flops_per_s > 0 && peaks.bytes_per_s > 0) m.floor_ms = roofline_seconds(m.flops, m.bytes, peaks) * 1e3;
  if (const std::string why = b.memory().unavailable_reason(); !why.empty()) {
    m.status = "unsupported";
    m.detail = why;
    return m;
  }
  const SharingTree planned = point.storage == Storage::shared ? problem.tree : problem.tree.flattened();
  if (const Support s = b.supports(problem.shape, planned); !s.ok) {
    m.status = "unsupported";
    m.detail = s.reason;
    return m;
  }
  try {
    const StagedProblem& staged = cache.get(b.memory(), point.storage);
    const auto plan = b.plan(staged.shape(), staged.tree(), point.options);
    const PlanTiming t = time_plan(b, *plan, staged, config);
    m.median_ms = t.median_ms;
    m.min_ms = t.min_ms;
    m.max_ms = t.max_ms;
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

Machine describe_machine(const std::vector<std::string>& backends) {
  Machine machine;
  machine.host = cpu::host_name();
  bool gpu = false, host = false;
  for (const std::string& name : backends) (on_gpu(backend(name)) ? gpu : host) = true;
  if (host) machine.host_peaks = cpu::measure_host_peaks();
#ifdef HYDRAGEN_WITH_CUDA
  if (gpu && cuda::device_memory().unavailable_reason().empty()) {
    machine.gpu = cuda::query_device().name;
    machine.gpu_peaks = cuda::measure_peaks();
  }
#else
  (void)gpu;
#endif
  return machine;
}

std::vector<Row> measure_shape(const std::vector<Point>& points, const Machine& machine, const TimingConfig& config,
                               const std::string& commit) {
  std::vector<Row> rows;
  if (points.empty()) return rows;
  const ShapePoint& s = points.front().shape;
  // Staged straight from the spec: no fp64 copy of a problem that can be gigabytes.
  const ProblemSpec problem{make_shape(s.batch, s.q_len, s.q_heads, s.kv_heads, s.head_dim, s.dtype),
                            SharingTree::prefix_suffix(s.prefix, std::vector<int>(s.batch, s.suffix)), config.seed};
  StageCache cache(problem);
  std::string invalid;
  try {
    validate_problem(problem.shape, problem.tree);
  } catch (const std::invalid_argument& e) {
    invalid = e.what();
  }
  for (const Point& p : points) {
    const std::string device = on_gpu(backend(p.backend)) ? machine.gpu : machine.host;
    Measurement m;
    if (invalid.empty()) {
      m = measure_one(p, problem, cache, machine, config);
    } else {
      m.status = "unsupported";
      m.detail = invalid;
    }
    rows.push_back(Row{device.empty() ? "none" : device, commit, p, m});
  }
  return rows;
}

}  // namespace hydragen::sweep
