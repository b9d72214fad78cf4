// hydragen-bench: every backend at a few named shapes through Google Benchmark, with the cost model's
// account of each (a benchmark, never a test). Each benchmark is one call of time_plan, the protocol
// hydragen-sweep times with (DESIGN.md section 6: CUDA graph replays with L2 flushed, host
// steady_clock after a warm-up), so the two tools report the same number: the median is the
// iteration's time, min_ms, max_ms and replays are counters. After the table it prints, per shape,
// the flat baseline against Hydragen on each device.
//
//   hydragen-bench [--shapes cpu-mha,cpu-gqa] [--backends cpu-flat,cpu-hydragen] [--replays N]
//                  [--cpu-replays N] [--benchmark_* flags]
//
// Our flags are parsed first and the rest is handed to Google Benchmark, so --help is ours; an
// argument neither knows is bad usage (exit 2).
#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/memory_need.hpp"
#include "flags/flag_checks.hpp"
#include "hydragen/cost_model.hpp"
#include "hydragen/problem.hpp"
#include "timing/plan_timing.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/calibration.hpp"
#endif

namespace {

using namespace hydragen;

struct Shape {
  std::string name;
  DType dtype;
  int batch, prefix, suffix, q_heads, kv_heads, head_dim;
  std::string why;  // what the shape shows
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"cpu-mha", DType::fp32, 64, 16384, 64, 8, 8, 128, "prefix K/V 134 MB >> L3: flat re-reads it from memory per sequence"},
      {"cpu-gqa", DType::fp32, 64, 4096, 64, 8, 1, 128, "prefix K/V 4 MB fits in L3; flat already packs the 8 query heads"},
      {"cpu-quick", DType::fp32, 32, 8192, 64, 8, 8, 128, "prefix K/V 67 MB > L3, small enough for a smoke run"},
      {"gpu-paper", DType::bf16, 1024, 16384, 64, 8, 1, 128, "the paper's largest point: prefix read once vs 1024 times"},
      {"gpu-small", DType::bf16, 32, 1024, 64, 8, 1, 128, "launch-bound: the floor is under a microsecond"},
      {"smoke", DType::fp32, 4, 64, 8, 4, 2, 64, "tiny: CTest runs every backend on it once"},
  };
  return all;
}

const Shape& shape_named(const std::string& name) {
  for (const Shape& s : shapes()) {
    if (s.name == name) return s;
  }
  throw std::invalid_argument("--shapes: '" + name + "' is not a shape (see --help)");
}

double last_level_cache_bytes() {
  // sysfs, not sysconf: glibc's sysconf reports the whole package's L3 in some VMs.
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index3/size");
  double size = 0;
  std::string unit;
  if (!(file >> size)) return 0;
  file >> unit;  // "32768K"
  return unit == "K" ? size * 1024 : unit == "M" ? size * 1048576 : size;
}

AttentionShape attention_shape(const Shape& s) {
  return make_shape(s.batch, 1, s.q_heads, s.kv_heads, s.head_dim, s.dtype);
}
SharingTree sharing_tree(const Shape& s) {
  return SharingTree::prefix_suffix(s.prefix, std::vector<int>(s.batch, s.suffix));
}

// The problem of a shape in the dtype a backend takes (the CUDA ones bf16, the CPU ones fp32 unless
// the shape says otherwise), generated once.
const Problem& problem(const Shape& s) {
  static std::map<std::string, Problem> cache;
  auto it = cache.find(s.name);
  if (it == cache.end()) it = cache.emplace(s.name, make_problem(attention_shape(s), sharing_tree(s), 2026)).first;
  return it->second;
}

void run_attention(benchmark::State& state, const Shape& s, const BackendChoice& choice, const TimingConfig& config) {
  const AttentionBackend& b = backend(choice.backend);
  if (const std::string why = b.memory().unavailable_reason(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  // Known before the shape is drawn: one that cannot fit is reported, not half-allocated.
  const AttentionShape shape = attention_shape(s);
  const SharingTree tree = sharing_tree(s);
  MemoryNeed need = backend_need(b, shape, tree, choice.storage, choice.options);
  need.host += problem_bytes(shape, tree);
  const std::string why = memory_refusal(need, b.memory(), "the fp64 problem, staging (and a CPU plan)",
                                         "inputs, outputs, the plan");
  if (!why.empty()) {
    state.SkipWithError(("does not fit: " + why).c_str());
    return;
  }
  const Problem& p = problem(s);
  const StagedProblem staged(b.memory(), p, choice.storage);
  const auto plan = b.plan(staged.shape(), staged.tree(), choice.options);
  for (auto _ : state) {  // one iteration (Iterations(1)): the protocol's replays are inside time_plan
    const PlanTiming t = time_plan(b, *plan, staged, config);
    state.SetIterationTime(t.median_ms * 1e-3);
    state.counters["min_ms"] = t.min_ms;
    state.counters["max_ms"] = t.max_ms;
    state.counters["replays"] = t.replays;
  }
  const CostEstimate c = estimate_cost(p.shape, p.tree, {last_level_cache_bytes()});
  state.counters["TFLOP/s"] = benchmark::Counter(c.flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["floor_GB/s"] = benchmark::Counter(c.floor_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// After the table: per shape, the flat baseline against Hydragen, with the cost model's account.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // One run per benchmark, its time time_plan's median.
    for (const Run& run : runs) medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const Shape& s : shapes()) {
      for (const auto& [flat, hydragen] : {std::pair<std::string, std::string>{"cpu-flat:shared", "cpu-hydragen:shared"},
                                           {"cuda-flash:redundant", "cuda-hydragen:shared"}}) {
        const auto f = medians_.find(s.name + "/" + flat), h = medians_.find(s.name + "/" + hydragen);
        if (f == medians_.end() || h == medians_.end()) continue;
        const Problem& p = problem(s);
        const CostEstimate c = estimate_cost(p.shape, p.tree, {last_level_cache_bytes()});
        std::printf(
            "\n%s (B=%d P=%d S=%d Hq=%d Hkv=%d D=%d %s): %s %.3f ms, %s %.3f ms, speedup %.2fx\n  %s\n"
            "  cost model: %.2f GFLOP either way; flat reads %.2f GB (%.2f GB from memory with a %.0f MB cache), "
            "hydragen %.2f GB:\n"
            "  memory traffic flat/hydragen = %.1fx; where that is ~1 the two differ only in how efficiently they compute:\n"
            "  flat %.1f TFLOP/s (products of g*q_len = %d rows), hydragen %.1f TFLOP/s (of B*g*q_len = %d rows)\n",
            s.name.c_str(), s.batch, s.prefix, s.suffix, s.q_heads, s.kv_heads, s.head_dim,
            std::string(dtype_name(s.dtype)).c_str(), flat.c_str(), f->second, hydragen.c_str(), h->second,
            f->second / h->second, s.why.c_str(), c.flops * 1e-9, c.flat_bytes * 1e-9, c.flat_memory_bytes * 1e-9,
            last_level_cache_bytes() / 1048576.0, c.decomposed_bytes * 1e-9, c.flat_memory_bytes / c.decomposed_bytes,
            c.flops * 1e-9 / f->second, s.q_heads / s.kv_heads, c.flops * 1e-9 / h->second, s.batch * s.q_heads / s.kv_heads);
      }
    }
  }

 private:
  std::map<std::string, double> medians_;  // "shape/backend:storage" -> median ms
};

// The spec parsed, its backend and options checked; a bad one's message names the flag.
BackendChoice checked_choice(const std::string& spec) {
  try {
    BackendChoice choice = parse_backend_choice(spec);
    resolve_options(choice.backend, backend(choice.backend).options(), choice.options);
    return choice;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--backends: ") + e.what());
  }
}

// Registers one benchmark per (shape, backend); throws std::invalid_argument, before anything runs,
// for an unknown name or option, a backend named twice, or a shape the backend does not take. A
// backend this machine cannot run (a CUDA one without a GPU) is no usage error: its row says why.
void register_benchmarks(const std::vector<std::string>& shape_names, const std::vector<std::string>& specs,
                         const TimingConfig& config) {
  for (const std::string& name : shape_names) {
    const Shape& s = shape_named(name);
    std::vector<std::string> chosen = specs;
    if (chosen.empty()) {
      chosen = s.dtype == DType::fp32 ? std::vector<std::string>{"cpu-flat:shared", "cpu-hydragen:shared"}
                                      : std::vector<std::string>{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen:shared"};
    }
    const SharingTree tree = sharing_tree(s);
    std::set<std::string> registered;
    for (const std::string& spec : chosen) {
      const BackendChoice choice = checked_choice(spec);
      const std::string label = choice.label() + ":" + std::string(storage_name(choice.storage));
      if (!registered.insert(label).second) throw std::invalid_argument("--backends: " + label + " is listed twice");
      const AttentionBackend& b = backend(choice.backend);
      if (const Support support = b.supports(attention_shape(s), choice.storage == Storage::shared ? tree : tree.flattened());
          !support.ok) {
        throw std::invalid_argument("--backends: " + spec + " does not take --shapes " + s.name + ": " + support.reason);
      }
      benchmark::RegisterBenchmark((s.name + "/" + label).c_str(),
                                   [&s, choice, config](benchmark::State& st) { run_attention(st, s, choice, config); })
          ->Iterations(1)
          ->Repetitions(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

// --calibrate: the planner's rates measured here, written for later runs (calibration.hpp).
int calibrate_rates() {
#ifdef HYDRAGEN_WITH_CUDA
  try {
    const hydragen::cuda::Calibration c = hydragen::cuda::calibrate_device_rates();
    const std::filesystem::path file = hydragen::cuda::calibration_file();
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << c.csv;
    std::printf("%sdevice rates written to %s\n", c.report.c_str(), file.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hydragen-bench: --calibrate: %s\n", e.what());
    return 1;
  }
#else
  std::fprintf(stderr, "hydragen-bench: --calibrate: this build has no CUDA backends\n");
  return 2;
#endif
}

int main(int argc, char** argv) {
  std::string shapes_text = "cpu-mha,cpu-gqa", backends_text;
  TimingConfig config;
  std::string shape_help = "named shapes, comma separated:";
  for (const Shape& s : shapes()) {
    shape_help += "\n  " + s.name + ": B=" + std::to_string(s.batch) + " P=" + std::to_string(s.prefix) + " S=" +
                  std::to_string(s.suffix) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" + std::to_string(s.kv_heads) +
                  " D=" + std::to_string(s.head_dim) + " " + std::string(dtype_name(s.dtype)) + " (" + s.why + ")";
  }
  CLI::App app{"Times attention backends at named shapes by hydragen-sweep's protocol, through Google Benchmark, "
               "then compares the flat baseline with Hydragen per shape.",
               "hydragen-bench"};
  // TakeLast only so that a repeated flag reaches the check below, which refuses it by name.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--shapes", shapes_text, shape_help)->capture_default_str();
  app.add_option("--backends", backends_text,
                 "backend[:option=value...][:shared|redundant], comma separated (default: the flat and Hydragen backends of the "
                 "shapes' device)");
  app.add_option("--replays", config.gpu_replays, "timed CUDA graph replays per benchmark, L2 flushed before each (at least 1)")
      ->check(hydragen::flags::decimal<int>())
      ->capture_default_str();
  app.add_option("--cpu-replays", config.cpu_replays, "timed runs per CPU benchmark, after a warm-up (at least 1)")
      ->check(hydragen::flags::decimal<int>())
      ->capture_default_str();
  bool calibrate = false;
  app.add_flag("--calibrate", calibrate,
               "measure the CUDA planner's device rates on this GPU (tens of milliseconds), write them where later runs "
               "read them ($HYDRAGEN_RATES_FILE, else ~/.cache/hydragen/device-rates.csv), print them beside the built-in "
               "table's, and exit");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() > 0) option->check(CLI::Validator(hydragen::flags::empty_error, ""));
  }
  app.footer("Google Benchmark's --benchmark_* flags also apply (e.g. --benchmark_filter=REGEX).");
  app.allow_extras();  // the --benchmark_* flags, for Google Benchmark below
  std::vector<std::string> rest;  // argv for Google Benchmark points into it
  try {
    app.parse(argc, argv);
    hydragen::flags::reject_repeats(app);
    if (calibrate) return calibrate_rates();
    for (const auto& [flag, value] : {std::pair<const char*, int>{"--replays", config.gpu_replays},
                                      {"--cpu-replays", config.cpu_replays}}) {
      if (value < 1) throw std::invalid_argument(std::string(flag) + " must be at least 1, got " + std::to_string(value));
    }
    const auto text = [](const std::string& entry) { return entry; };
    const std::vector<std::string> shape_names = hydragen::flags::parse_list<std::string>("--shapes", shapes_text, text);
    const std::vector<std::string> specs = app.count("--backends") > 0
                                               ? hydragen::flags::parse_list<std::string>("--backends", backends_text, text)
                                               : std::vector<std::string>{};
    rest = app.remaining();
    std::vector<char*> bench_argv{argv[0]};
    for (std::string& arg : rest) bench_argv.push_back(arg.data());
    int bench_argc = static_cast<int>(bench_argv.size());
    benchmark::Initialize(&bench_argc, bench_argv.data());  // removes the flags it knows
    if (bench_argc > 1) throw std::invalid_argument(std::string("unknown argument '") + bench_argv[1] + "' (see --help)");
    register_benchmarks(shape_names, specs, config);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "hydragen-bench: error: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hydragen-bench: error: %s\n", e.what());
    return 2;
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
