// hydragen-bench: Google Benchmark timings of every backend at a few named shapes, with the cost
// model's account of each (a benchmark, never a test). CPU backends: wall time of run(); CUDA
// backends: manual time from CUDA events around each run, L2 flushed before it. After the table it
// prints, per shape, the flat baseline against Hydragen on each device.
//
//   hydragen-bench [--shapes cpu-mha,cpu-gqa] [--backends cpu-flat,cpu-hydragen] [--repetitions N]
//                  [--benchmark_* flags]
#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/cost_model.hpp"
#include "hydragen/problem.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/timing.hpp"
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

// The problem of a shape in the dtype a backend takes (the CUDA ones bf16, the CPU ones fp32 unless
// the shape says otherwise), generated once.
const Problem& problem(const Shape& s) {
  static std::map<std::string, Problem> cache;
  auto it = cache.find(s.name);
  if (it == cache.end()) {
    const AttentionShape shape = make_shape(s.batch, 1, s.q_heads, s.kv_heads, s.head_dim, s.dtype);
    it = cache.emplace(s.name, make_problem(shape, SharingTree::prefix_suffix(s.prefix, std::vector<int>(s.batch, s.suffix)), 2026)).first;
  }
  return it->second;
}

void run_attention(benchmark::State& state, const Shape& s, const std::string& name, Storage storage) {
  const AttentionBackend& b = backend(name);
  if (const std::string why = b.memory().unavailable_reason(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const Problem& p = problem(s);
  const StagedProblem staged(b.memory(), p, storage);
  const auto plan = b.plan(staged.shape(), staged.tree());
  plan->run(staged.inputs(), staged.outputs());  // warm-up: first touch, module load
  if (b.memory().name() == "cuda") {
#ifdef HYDRAGEN_WITH_CUDA
    cuda::RunTimer timer;
    for (auto _ : state) {
      state.SetIterationTime(
          timer.time_ms([&](cudaStream_t st) { plan->run(staged.inputs(), staged.outputs(), Stream{st}); }) * 1e-3);
    }
#endif
  } else {
    for (auto _ : state) plan->run(staged.inputs(), staged.outputs());
  }
  const CostEstimate c = estimate_cost(p.shape, p.tree, {last_level_cache_bytes()});
  state.counters["TFLOP/s"] = benchmark::Counter(c.flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["floor_GB/s"] = benchmark::Counter(c.floor_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// After the table: per shape, the flat baseline against Hydragen, with the cost model's account.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.aggregate_name == "median" || (run.run_type == Run::RT_Iteration && run.repetitions <= 1)) {
        medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
      }
    }
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

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<std::string> shape_names{"cpu-mha", "cpu-gqa"};
  std::vector<std::string> specs;
  int repetitions = 5;
  std::string shape_help = "named shapes, comma separated:";
  for (const Shape& s : shapes()) {
    shape_help += "\n  " + s.name + ": B=" + std::to_string(s.batch) + " P=" + std::to_string(s.prefix) + " S=" +
                  std::to_string(s.suffix) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" + std::to_string(s.kv_heads) +
                  " D=" + std::to_string(s.head_dim) + " " + std::string(dtype_name(s.dtype)) + " (" + s.why + ")";
  }
  CLI::App app{"Google Benchmark timings of attention backends at named shapes (Google Benchmark's own "
               "--benchmark_* flags also apply)",
               "hydragen-bench"};
  app.add_option("--shapes", shape_names, shape_help)->delimiter(',');
  app.add_option("--backends", specs,
                 "backend[:shared|redundant], comma separated (default: the flat and Hydragen backends of the "
                 "shapes' device)")
      ->delimiter(',');
  app.add_option("--repetitions", repetitions, "timed runs per benchmark; the median is reported")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
    for (const std::string& name : shape_names) {
      const Shape& s = shape_named(name);
      std::vector<std::string> chosen = specs;
      if (chosen.empty()) {
        chosen = s.dtype == DType::fp32 ? std::vector<std::string>{"cpu-flat:shared", "cpu-hydragen:shared"}
                                        : std::vector<std::string>{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen:shared"};
      }
      for (const std::string& spec : chosen) {
        const BackendChoice choice = parse_backend_choice(spec);
        const std::string name_only = choice.backend;
        const Storage storage = choice.storage;
        const AttentionBackend& b = backend(name_only);  // throws for an unknown name
        auto* bench = benchmark::RegisterBenchmark(
            (s.name + "/" + name_only + ":" + std::string(storage_name(storage))).c_str(),
            [&s, name_only, storage](benchmark::State& st) { run_attention(st, s, name_only, storage); });
        bench->Iterations(1)->Repetitions(repetitions)->ReportAggregatesOnly(repetitions > 1)->Unit(benchmark::kMillisecond);
        if (b.memory().name() == "cuda") {
          bench->UseManualTime();
        } else {
          bench->UseRealTime();
        }
      }
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hydragen-bench: error: %s\n", e.what());
    return 2;
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
