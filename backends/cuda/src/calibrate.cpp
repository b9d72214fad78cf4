#include "calibrate.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hydragen/cuda/calibration.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "hydragen/cuda/timing.hpp"
#include "hydragen/text_file.hpp"
#include "kernels/launch.hpp"
#include "planner.hpp"
#include "plans.hpp"
#include "scratch_problem.hpp"

namespace hydragen::cuda {

namespace {

constexpr int kD = 128;          // the shapes the table's rates were measured at: bf16, D 128, one KV head
constexpr int kQueryHeads = 8;   // 8 rows per sequence: 16 sequences fill a wgmma block's 128 rows
constexpr int kRuns = 5;         // timed runs per size; the median
constexpr double kTokenBytes = 2.0 * kD * 2;  // K and V of one token, bf16

AttentionShape shape_of(int sequences) { return make_shape(sequences, 1, kQueryHeads, 1, kD, DType::bf16); }

// The median of samples in ms, in ns.
double median_of_runs_ns(std::vector<double> ms) { return summarize(std::move(ms)).median_ms * 1e6; }

// The median of kRuns timed runs of `enqueue`, L2 flushed before each, in ns.
double median_ns(RunTimer& timer, const std::function<void(cudaStream_t)>& enqueue) {
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) ms.push_back(timer.time_ms(enqueue));
  return median_of_runs_ns(std::move(ms));
}

// A synthetic plan (its decisions set by hand) over zero-filled inputs, run once (which uploads its
// tables) and ready to time.
class TimedPlan {
 public:
  TimedPlan(const AttentionShape& shape, const SharingTree& tree, const Planned& planned, RunTimer& timer)
      : scratch_(shape, tree), plan_(make_segment_plan(shape, tree, planned)) {
    run(timer.stream());
  }
  void run(cudaStream_t s) const { plan_->run(scratch_.in(), scratch_.out(), Stream{s}); }

 private:
  ScratchProblem scratch_;
  std::unique_ptr<AttentionPlan> plan_;
};

double median_ns(RunTimer& timer, const TimedPlan& plan) {
  return median_ns(timer, [&](cudaStream_t s) { plan.run(s); });
}

// What `longer` takes beyond `shorter`, in ns: the median over kRuns pairs, the two timed in turn, so
// that a state drifting during the calibration (clocks, DRAM) moves both of a pair alike. With each
// size's own median, three calibrations on one H200 put its DRAM rate at 3.5 to 5.1 TB/s (perf-notes v45).
double extra_ns(RunTimer& timer, const TimedPlan& shorter, const TimedPlan& longer) {
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) {
    const double first = timer.time_ms([&](cudaStream_t s) { shorter.run(s); });
    ms.push_back(timer.time_ms([&](cudaStream_t s) { longer.run(s); }) - first);
  }
  return median_of_runs_ns(std::move(ms));
}

// One wgmma block's row block of 128 rows over a shared segment of `tokens`, cut into `parts` dealt to
// `workers` persistent blocks (0: a block per part).
TimedPlan wgmma_plan(int tokens, int parts, int workers, const DeviceLimits& device, RunTimer& timer) {
  const int seqs = kWgmmaRows / kQueryHeads;
  const AttentionShape shape = shape_of(seqs);
  const SharingTree tree = SharingTree::prefix_suffix(tokens, std::vector<int>(seqs, 0));
  Planned p;
  p.decisions.device = device;
  p.decisions.wide_kernel = ItemKernel::wgmma;
  p.decisions.build = BuildChoices{kWgmmaRows, 1, parts, workers, 0};
  const std::vector<Group> groups = segment_groups(shape, tree, false);
  p.schedule = build(shape, groups, census(shape, groups, kWgmmaRows), p.decisions.build);
  p.decisions.launches.wide_workers = workers > 0 ? workers : static_cast<int>(p.schedule.wide_items.size());
  p.decisions.launches.run_merge = false;  // several parts' rows go unmerged: the time is the attention's alone
  p.decisions.recipe = LaunchRecipe::one_launch;
  return TimedPlan(shape, tree, p, timer);
}

// `sms` SMs of whole-SM leaf warps, twelve sequences each streaming its own `tokens`.
TimedPlan leaves_plan(int sms, int tokens, const DeviceLimits& device, RunTimer& timer) {
  const AttentionShape shape = shape_of(kSmWarps * sms);
  const SharingTree tree = SharingTree::flat(std::vector<int>(static_cast<std::size_t>(shape.num_seqs), tokens));
  Planned p;
  p.decisions.device = device;
  p.decisions.narrow_kernel = ItemKernel::sm_item_warps;
  p.decisions.leaf_sms = sms;
  p.decisions.build = BuildChoices{kNarrowRows, 1, 1, 0, 0};
  const std::vector<Group> groups = path_groups(tree);
  p.schedule = build(shape, groups, census(shape, groups, kNarrowRows), p.decisions.build);
  p.decisions.launches.narrow_workers = static_cast<int>(p.schedule.narrow_items.size());
  p.decisions.recipe = LaunchRecipe::one_launch;
  return TimedPlan(shape, tree, p, timer);
}

// The merge kernel alone over 1024 sequences' 8 queries of two partial rows each.
double merge_ns(RunTimer& timer) {
  const int queries = 1024 * kQueryHeads, rows = 2 * queries;
  DeviceArray<float> partial_o(static_cast<std::size_t>(rows) * kD), partial_lse(static_cast<std::size_t>(rows)), lse(queries);
  DeviceArray<unsigned char> o(static_cast<std::size_t>(queries) * kD * 2);
  std::vector<int> offsets, order;
  for (int q = 0; q <= queries; ++q) offsets.push_back(2 * q);
  for (int r = 0; r < rows; ++r) order.push_back(r);
  const DeviceArray<int> offsets_d = upload(offsets), rows_d = upload(order);
  for (auto* a : {&partial_o, &partial_lse}) CUDA_CHECK(cudaMemset(a->data(), 0, a->bytes()));
  MergeParams m;
  m.partial_o = partial_o.data();
  m.partial_lse = partial_lse.data();
  m.offsets = offsets_d.data();
  m.rows = rows_d.data();
  m.o = o.data();
  m.lse = lse.data();
  m.num_queries = queries;
  return median_ns(timer, [&](cudaStream_t s) { launch_merge(m, 1, false, DType::bf16, kD, s); });
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

}  // namespace

DeviceRates measure_device_rates() {
  DeviceLimits device = device_limits();
  if (!device.wgmma) {
    throw std::invalid_argument("measuring the planner's rates needs the wgmma kernel (compute capability 9.0, an sm_90a build): " +
                                device.name + " has none, and its plans use no rates");
  }
  device.rates = DeviceRates{};  // the synthetic plans decide nothing: no lookup, no recursion
  RunTimer timer;
  DeviceRates r = unmeasured_rates();  // the margin and the partials' share: no calibration measures them
  // Steady rates: the difference of two sizes, so that launches and pipeline fills cancel.
  const int t1 = 8192, t2 = 16384;
  const TimedPlan one_part = wgmma_plan(t2, 1, 0, device, timer);  // the rate's longer size, and the parts' base
  {
    const TimedPlan shorter = wgmma_plan(t1, 1, 0, device, timer);
    r.wgmma_sm_flops_per_ns = 4.0 * kWgmmaRows * kD * (t2 - t1) / extra_ns(timer, shorter, one_part);
    // A part's time beyond its tokens' at the steady rate: the launch, the pipeline fill, the tail.
    r.fixed_ns = std::max(0.0, median_ns(timer, shorter) - 4.0 * kWgmmaRows * kD * t1 / r.wgmma_sm_flops_per_ns);
  }
  auto leaf_rate = [&](int sms, int tokens1, int tokens2) {  // bytes per ns that `sms` SMs of leaf warps stream
    const TimedPlan shorter = leaves_plan(sms, tokens1, device, timer), longer = leaves_plan(sms, tokens2, device, timer);
    return kSmWarps * sms * kTokenBytes * (tokens2 - tokens1) / extra_ns(timer, shorter, longer);
  };
  r.leaf_sm_bytes_per_ns = leaf_rate(1, t1, t2);
  r.leaf_dram_bytes_per_ns = leaf_rate(device.sms, 1024, 2048);
  r.beside_leaf_dram_share = std::min(1.0, leaf_rate(device.sms * 3 / 4, 1024, 2048) / r.leaf_dram_bytes_per_ns);
  r.merge_ns = merge_ns(timer);
  {  // Four parts on one persistent block against one part of the same tokens: three moves.
    const TimedPlan four = wgmma_plan(t2, 4, 1, device, timer);
    r.part_switch_ns = std::max(0.0, extra_ns(timer, one_part, four) / 3);
  }
  r.source = "measured on this " + device.name + " " + today() + "; " + r.source;
  return r;
}

std::string calibration_file() {
  if (const char* file = std::getenv("HYDRAGEN_RATES_FILE"); file != nullptr && *file != '\0') return file;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache != '\0') {
    return std::string(cache) + "/hydragen/device-rates.csv";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/hydragen/device-rates.csv";
}

std::optional<DeviceRates> resolve_device_rates(const DeviceLimits& device) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<DeviceRates>> resolved;  // by device name
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = resolved.find(device.name); it != resolved.end()) return it->second;
  const RatesSource source = rates_source(std::getenv("HYDRAGEN_RATES"));
  std::optional<DeviceRates> rates = source == RatesSource::table_first ? device_rates(device.name) : std::nullopt;
  if (!rates && source != RatesSource::measure) {
    const std::string file = calibration_file();
    std::optional<std::string> text;
    try {
      text = hydragen::read_text_if_exists(file);  // none: no calibration made yet
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("the calibration file '" + file + "' " + e.what());
    }
    rates = calibrated_rates(source, text, device.name, file);
  }
  if (!rates && device.wgmma) rates = measure_device_rates();
  resolved[device.name] = rates;
  return rates;
}

Calibration calibrate_device_rates() {
  const DeviceRates r = measure_device_rates();
  const DeviceLimits device = device_limits();
  Calibration c;
  c.csv = device_rates_csv(device.name, r, "hydragen-bench --calibrate " + today());
  const std::optional<DeviceRates> table = device_rates(device.name);
  std::ostringstream report;
  report.precision(4);
  const std::pair<const char*, double DeviceRates::*> rows[] = {
      {"wgmma_sm_flops (FLOP/ns)", &DeviceRates::wgmma_sm_flops_per_ns}, {"leaf_sm_bytes (B/ns)", &DeviceRates::leaf_sm_bytes_per_ns},
      {"leaf_dram_bytes (B/ns)", &DeviceRates::leaf_dram_bytes_per_ns},  {"beside_leaf_dram_share", &DeviceRates::beside_leaf_dram_share},
      {"merge (ns)", &DeviceRates::merge_ns},                            {"part_switch (ns)", &DeviceRates::part_switch_ns},
      {"fixed (ns)", &DeviceRates::fixed_ns}};
  for (const auto& [name, field] : rows) {
    report << name << ": " << r.*field;
    if (table) report << " (the table's: " << (*table).*field << ", measured / table " << r.*field / (*table).*field << ")";
    report << "\n";
  }
  report << unmeasured_rates().source << "\n";
  c.report = report.str();
  return c;
}

}  // namespace hydragen::cuda
