// hydragen-bench-cpu: cpu-flat (shared storage) against cpu-hydragen on the foundation issue's regimes,
// with the cost model's bytes beside each timing. Google Benchmark; median of --repetitions runs.
//
//   hydragen-bench-cpu [--regime mha|gqa|quick|all] [--repetitions N] [--benchmark_* flags]
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

namespace {

using namespace hydragen;

struct Regime {
  std::string name;
  int batch, prefix, suffix, q_heads, kv_heads, head_dim;
  std::string why;  // what the regime shows
};

const std::vector<Regime>& regimes() {
  static const std::vector<Regime> all = {
      {"mha", 64, 16384, 64, 8, 8, 128, "prefix K/V 134 MB >> L3: flat re-reads it from memory per sequence"},
      {"gqa", 64, 4096, 64, 8, 1, 128, "prefix K/V 4 MB fits in L3; flat already packs the 8 query heads"},
      {"quick", 32, 8192, 64, 8, 8, 128, "prefix K/V 67 MB > L3, small enough for the main job's smoke run"},
  };
  return all;
}

// The L3 this CPU sees, from sysfs (glibc's sysconf reports the whole package's L3 in some VMs).
double last_level_cache_bytes() {
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index3/size");
  double size = 0;
  std::string unit;
  if (!(file >> size)) return 0;
  file >> unit;  // "32768K"
  return unit == "K" ? size * 1024 : unit == "M" ? size * 1048576 : size;
}

// One staged problem per regime, shared by both backends (both read host memory).
struct Fixture {
  Problem problem;
  std::unique_ptr<StagedProblem> staged;
  CostEstimate cost;
};

Fixture& fixture(const Regime& r) {
  static std::map<std::string, Fixture> cache;
  auto it = cache.find(r.name);
  if (it == cache.end()) {
    const AttentionShape shape = make_shape(r.batch, 1, r.q_heads, r.kv_heads, r.head_dim, DType::fp32);
    const SharingTree tree = SharingTree::prefix_suffix(r.prefix, std::vector<int>(r.batch, r.suffix));
    Fixture f{make_problem(shape, tree, 2026), nullptr, estimate_cost(shape, tree, {last_level_cache_bytes()})};
    f.staged = std::make_unique<StagedProblem>(host_memory(), f.problem, Storage::shared);
    it = cache.emplace(r.name, std::move(f)).first;
  }
  return it->second;
}

void run_attention(benchmark::State& state, const Regime& r, const std::string& backend_name) {
  Fixture& f = fixture(r);
  const auto plan = backend(backend_name).plan(f.staged->shape(), f.staged->tree());
  plan->run(f.staged->inputs(), f.staged->outputs());  // warm-up: first touch of workspaces
  for (auto _ : state) plan->run(f.staged->inputs(), f.staged->outputs());
  const bool flat = backend_name == "cpu-flat";
  state.counters["GFLOP/s"] = benchmark::Counter(f.cost.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["model_GB/s"] = benchmark::Counter((flat ? f.cost.flat_memory_bytes : f.cost.decomposed_bytes) * 1e-9,
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

// Prints the flat/hydragen ratio of medians per regime, with the cost model's account of it.
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
    for (const Regime& r : regimes()) {
      const auto flat = medians_.find(r.name + "/cpu-flat");
      const auto hyd = medians_.find(r.name + "/cpu-hydragen");
      if (flat == medians_.end() || hyd == medians_.end()) continue;
      const CostEstimate& c = fixture(r).cost;
      std::printf(
          "\n%s (B=%d P=%d S=%d Hq=%d Hkv=%d D=%d fp32): cpu-flat %.1f ms, cpu-hydragen %.1f ms, speedup %.2fx\n"
          "  %s\n"
          "  cost model: %.2f GFLOP either way; flat reads %.2f GB (%.2f GB from memory with a %.0f MB cache), "
          "hydragen %.2f GB:\n"
          "  memory traffic flat/hydragen = %.1fx; where that is ~1 the two differ only in how efficiently they compute:\n"
          "  flat %.0f GFLOP/s (GEMMs of g*q_len = %d rows), hydragen %.0f GFLOP/s (GEMMs of B*g*q_len = %d rows)\n",
          r.name.c_str(), r.batch, r.prefix, r.suffix, r.q_heads, r.kv_heads, r.head_dim, flat->second,
          hyd->second, flat->second / hyd->second, r.why.c_str(), c.flops * 1e-9, c.flat_bytes * 1e-9,
          c.flat_memory_bytes * 1e-9, last_level_cache_bytes() / 1048576.0, c.decomposed_bytes * 1e-9,
          c.flat_memory_bytes / c.decomposed_bytes, c.flops * 1e-6 / flat->second, r.q_heads / r.kv_heads,
          c.flops * 1e-6 / hyd->second, r.batch * r.q_heads / r.kv_heads);
    }
  }

 private:
  std::map<std::string, double> medians_;  // "regime/backend" -> median ms
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::string regime = "all";
  int repetitions = 5;
  CLI::App app{"cpu-flat vs cpu-hydragen (Google Benchmark flags such as --benchmark_format=json also apply)",
               "hydragen-bench-cpu"};
  app.add_option("--regime", regime, "mha (B=64 P=16384 Hq=Hkv=8), gqa (B=64 P=4096 Hq=8 Hkv=1), quick, or all (mha+gqa)")
      ->check(CLI::IsMember({"mha", "gqa", "quick", "all"}));
  app.add_option("--repetitions", repetitions, "timed runs per backend; the median is reported")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const Regime& r : regimes()) {
    if (regime != "all" ? r.name != regime : r.name == "quick") continue;
    for (const std::string name : {"cpu-flat", "cpu-hydragen"}) {
      benchmark::RegisterBenchmark((r.name + "/" + name).c_str(), [r, name](benchmark::State& s) { run_attention(s, r, name); })
          ->Iterations(1)
          ->Repetitions(repetitions)
          ->ReportAggregatesOnly(repetitions > 1)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
