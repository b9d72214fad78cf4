#include "measure.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "hydragen/backends.hpp"
#include "hydragen/cpu/peaks.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/memory_need.hpp"
#include "hydragen/nominal_peaks.hpp"
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
  bool has(const DeviceMemory& memory, Storage storage) const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](const Entry& e) { return e.memory == &memory && e.storage == storage; });
  }
  // Frees the stages of other storages in `memory` (to make room for this one); whether any were.
  bool drop_others(const DeviceMemory& memory, Storage storage) {
    const auto n = entries_.size();
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return e.memory == &memory && e.storage != storage; }),
                   entries_.end());
    return entries_.size() != n;
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

// Empty when the point's staging (unless cached) and its plan fit the memory available now; else
// the refusal line. Stages of the shape's other storage are dropped to make room if that helps.
std::string memory_refusal_for(const AttentionBackend& b, const Point& point, const ProblemSpec& problem,
                               const SharingTree& planned, StageCache& cache) {
  const StagingBytes staged = staging_bytes(problem.shape, problem.tree, point.storage);
  const std::size_t workspace = b.workspace_bytes(problem.shape, planned, point.options);
  const bool on_host = &b.memory() == &host_memory();
  for (;;) {
    const bool cached = cache.has(b.memory(), point.storage);
    const std::size_t inputs = cached ? 0 : staged.peak;
    std::string why = memory_refusal(b.memory(), inputs + workspace,
                                     "inputs and outputs " + format_bytes(inputs) + ", plan " + format_bytes(workspace));
    if (why.empty() && !on_host && !cached) {
      why = memory_refusal(host_memory(), staged.host, "staging the largest tensor on the host");
    }
    if (why.empty() || !cache.drop_others(b.memory(), point.storage)) return why;
  }
}

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
  if (const auto nominal = on_gpu(b) ? nominal_peaks(machine.gpu, problem.shape.dtype) : std::nullopt) {
    m.nominal_ms = roofline_seconds(m.flops, m.bytes, *nominal) * 1e3;
  }
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
  // Known before anything is drawn: a point that cannot fit is an `oom` row at once.
  if (std::string why = memory_refusal_for(b, point, problem, planned, cache); !why.empty()) {
    m.status = "oom";
    m.detail = why;
    return m;
  }
  try {
    const StagedProblem& staged = cache.get(b.memory(), point.storage);
    const auto plan = b.plan(staged.shape(), staged.tree(), point.options);
    const std::vector<PlanDecision> decisions = plan->decisions();  // built per call: once for both forms
    m.decisions = decisions_cell(decisions);
    m.explanation = explain(decisions);
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
    machine.sharing = cuda::device_memory().sharing_rates();
  }
#else
  (void)gpu;
#endif
  return machine;
}

std::vector<Row> measure_shape(const std::vector<Point>& points, const Machine& machine, const TimingConfig& config,
                               const std::string& commit, const std::function<void(const Row&)>& on_row) {
  std::vector<Row> rows;
  if (points.empty()) return rows;
  const ShapePoint& s = points.front().shape;
  // Staged straight from the spec: no fp64 copy of a problem that can be gigabytes.
  const ProblemSpec problem{make_shape(s.batch, s.q_len, s.q_heads, s.kv_heads, s.head_dim, s.dtype),
                            s.sharing_tree(machine.sharing), config.seed};
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
    if (on_row) on_row(rows.back());
  }
  return rows;
}

}  // namespace hydragen::sweep
