// hydragen-sweep: times backends over a grid of (B, P, S) and writes one CSV row per point
// (DESIGN.md section 7). Progress on stderr; a point that cannot run is recorded, never fatal.
//
//   hydragen-sweep --backends cuda-flash:redundant,cuda-flash:shared,cuda-hydragen
//                  --batch 32,1024 --prefix 1024,16384 --suffix 64 --dtype bf16 --csv out/sweep.csv
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "measure.hpp"
#include "point.hpp"

#ifndef HYDRAGEN_COMMIT
#define HYDRAGEN_COMMIT "unknown"
#endif

namespace {

using namespace hydragen;

struct Options {
  std::vector<std::string> backends{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"};
  std::vector<int> batch{32}, prefix{1024}, suffix{64};
  int q_len = 1, q_heads = 8, kv_heads = 1, head_dim = 128;
  std::string dtype = "bf16";
  std::string csv;
  sweep::TimingConfig timing;
};

// "name" or "name:storage".
sweep::Point backend_point(const std::string& spec) {
  sweep::Point p;
  const auto colon = spec.find(':');
  p.backend = spec.substr(0, colon);
  if (colon != std::string::npos) p.storage = parse_storage(spec.substr(colon + 1));
  backend(p.backend);  // throws, listing the known backends, when the name is unknown
  return p;
}

int run(const Options& o) {
  std::vector<sweep::Point> backends;
  bool gpu = false;
  for (const std::string& spec : o.backends) {
    backends.push_back(backend_point(spec));
    gpu = gpu || backend(backends.back().backend).memory().name() == "cuda";
  }
  const DType dtype = parse_dtype(o.dtype);
  std::cerr << "hydragen-sweep: measuring peaks...\n";
  const sweep::Machine machine = sweep::describe_machine(gpu);
  std::fprintf(stderr, "hydragen-sweep: %s, peaks %.0f TFLOP/s, %.0f GB/s\n", machine.device.c_str(),
               machine.peaks.flops_per_s * 1e-12, machine.peaks.bytes_per_s * 1e-9);
  std::ofstream file;
  if (!o.csv.empty()) {
    file.open(o.csv);
    if (!file) throw std::invalid_argument("--csv: cannot write '" + o.csv + "'");
  }
  std::ostream& out = o.csv.empty() ? std::cout : file;
  sweep::write_csv_header(out);
  const std::size_t total = o.batch.size() * o.prefix.size() * o.suffix.size() * backends.size();
  std::size_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int b : o.batch) {
    for (int p : o.prefix) {
      for (int s : o.suffix) {
        std::vector<sweep::Point> points = backends;
        for (sweep::Point& pt : points) {
          pt.dtype = dtype;
          pt.batch = b;
          pt.prefix = p;
          pt.suffix = s;
          pt.q_len = o.q_len;
          pt.q_heads = o.q_heads;
          pt.kv_heads = o.kv_heads;
          pt.head_dim = o.head_dim;
        }
        const std::vector<sweep::Measurement> ms = sweep::measure_shape(points, machine, o.timing);
        for (std::size_t i = 0; i < points.size(); ++i) {
          sweep::write_csv_row(out, machine.device, HYDRAGEN_COMMIT, points[i], ms[i]);
          ++done;
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          const std::string storage(storage_name(points[i].storage));
          if (ms[i].status == "ok") {
            std::fprintf(stderr, "[%zu/%zu] %-14s %-9s B=%-5d P=%-6d S=%-4d %9.4f ms  %6.2fx floor  (%.0f s, ~%.0f s left)\n",
                         done, total, points[i].backend.c_str(), storage.c_str(), b, p, s, ms[i].median_ms,
                         ms[i].floor_ms > 0 ? ms[i].median_ms / ms[i].floor_ms : 0.0, elapsed,
                         elapsed / static_cast<double>(done) * static_cast<double>(total - done));
          } else {
            std::fprintf(stderr, "[%zu/%zu] %-14s %-9s B=%-5d P=%-6d S=%-4d %s: %s\n", done, total,
                         points[i].backend.c_str(), storage.c_str(), b, p, s, ms[i].status.c_str(), ms[i].detail.c_str());
          }
        }
        out.flush();
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Times attention backends over a grid of batch x prefix x suffix; one CSV row per point.",
               "hydragen-sweep"};
  app.add_option("--backends", o.backends, "backend[:shared|redundant], comma separated")->delimiter(',');
  app.add_option("--batch", o.batch, "batch sizes B")->delimiter(',');
  app.add_option("--prefix", o.prefix, "shared prefix lengths P")->delimiter(',');
  app.add_option("--suffix", o.suffix, "suffix lengths S (every sequence)")->delimiter(',');
  app.add_option("--q-len", o.q_len, "queries per sequence");
  app.add_option("--q-heads", o.q_heads, "query heads Hq");
  app.add_option("--kv-heads", o.kv_heads, "key/value heads Hkv");
  app.add_option("--head-dim", o.head_dim, "head dimension D");
  app.add_option("--dtype", o.dtype, "fp32|fp16|bf16");
  app.add_option("--replays", o.timing.gpu_replays, "timed CUDA graph replays per point (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cpu-replays", o.timing.cpu_replays, "timed runs per CPU point")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.timing.seed, "seed of the N(0,1) inputs");
  app.add_option("--csv", o.csv, "write the CSV here (default: stdout)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return run(o);
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-sweep: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hydragen-sweep: failed: " << e.what() << "\n";
    return 1;
  }
}
