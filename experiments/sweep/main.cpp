// hydragen-sweep: times backends over a grid of problems and writes one CSV row per point
// (DESIGN.md section 7); JSON too with --json. Progress on stderr; a point that cannot run is
// recorded (oom, unsupported, error), never fatal. Ends with a short table.
//
//   hydragen-sweep --preset paper-fig4 --csv out/fig4.csv
//   hydragen-sweep --backends cuda-flash:redundant,cuda-hydragen --batch 32,1024 --prefix 1024,16384
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "grid.hpp"
#include "hydragen/backends.hpp"
#include "measure.hpp"
#include "point.hpp"

#include "commit.hpp"  // HYDRAGEN_COMMIT, stamped at build time

namespace {

using namespace hydragen;

struct Options {
  std::string preset;
  std::vector<std::string> backends;
  std::vector<std::string> dtypes{"bf16"};
  std::vector<int> batch{32}, prefix{1024}, suffix{64}, q_len{1}, q_heads{8}, kv_heads{1}, head_dim{128};
  std::string csv, json;
  bool points = false;
  sweep::TimingConfig timing;
};

sweep::Grid grid_from(const Options& o, const CLI::App& app) {
  sweep::Grid g;
  if (!o.preset.empty()) {
    g = sweep::preset(o.preset);
    if (!o.backends.empty()) g.backends = o.backends;  // e.g. a preset's grid on other backends
    for (const char* flag : {"--dtype", "--batch", "--prefix", "--suffix", "--q-len", "--q-heads", "--kv-heads", "--head-dim"}) {
      if (app.count(flag) > 0) throw std::invalid_argument(std::string(flag) + " cannot change a --preset's grid");
    }
    return g;
  }
  std::vector<DType> dtypes;
  for (const std::string& d : o.dtypes) dtypes.push_back(parse_dtype(d));
  g.backends = o.backends.empty() ? std::vector<std::string>{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"}
                                  : o.backends;
  g.shapes = sweep::product(dtypes, o.batch, o.prefix, o.suffix, o.q_len, o.q_heads, o.kv_heads, o.head_dim);
  return g;
}

void print_table(const std::vector<sweep::Row>& rows) {
  std::printf("%-24s %-9s %-5s %5s %6s %4s %3s %3s %4s %10s %8s %s\n", "backend", "storage", "dtype", "B", "P", "S", "Hq",
              "Hkv", "D", "median_ms", "x_floor", "status");
  for (const sweep::Row& r : rows) {
    const sweep::ShapePoint& s = r.point.shape;
    const bool ok = r.m.status == "ok";
    std::printf("%-24s %-9s %-5s %5d %6d %4d %3d %3d %4d %10s %8s %s\n", r.point.label().c_str(),
                std::string(storage_name(r.point.storage)).c_str(), std::string(dtype_name(s.dtype)).c_str(), s.batch,
                s.prefix, s.suffix, s.q_heads, s.kv_heads, s.head_dim, ok ? std::to_string(r.m.median_ms).c_str() : "-",
                ok && r.m.floor_ms > 0 ? std::to_string(r.m.median_ms / r.m.floor_ms).substr(0, 6).c_str() : "-",
                r.m.status.c_str());
  }
}

int run(const Options& o, const CLI::App& app) {
  const sweep::Grid grid = grid_from(o, app);
  if (o.points) {  // what experiments/peers/peers.py --points prints for the same preset
    for (const sweep::ShapePoint& s : grid.shapes) {
      std::printf("%d,%d,%d,%d,%d,%d,%d\n", s.batch, s.prefix, s.suffix, s.q_len, s.q_heads, s.kv_heads, s.head_dim);
    }
    return 0;
  }
  std::vector<std::string> names;
  for (const std::string& spec : grid.backends) {
    const sweep::Point point = sweep::make_point(spec, {});
    // Throws, listing the known backends or the options it takes, before anything is measured.
    resolve_options(point.backend, backend(point.backend).options(), point.options);
    names.push_back(point.backend);
  }
  std::cerr << "hydragen-sweep: " << grid.shapes.size() << " problems x " << grid.backends.size()
            << " backends; measuring peaks...\n";
  const sweep::Machine machine = sweep::describe_machine(names);
  if (!machine.gpu.empty()) {
    std::fprintf(stderr, "hydragen-sweep: %s: %.0f TFLOP/s bf16 GEMM, %.0f GB/s copy\n", machine.gpu.c_str(),
                 machine.gpu_peaks.flops_per_s * 1e-12, machine.gpu_peaks.bytes_per_s * 1e-9);
  }
  if (machine.host_peaks.flops_per_s > 0) {
    std::fprintf(stderr, "hydragen-sweep: %s: %.0f GFLOP/s fp32 GEMM, %.1f GB/s copy\n", machine.host.c_str(),
                 machine.host_peaks.flops_per_s * 1e-9, machine.host_peaks.bytes_per_s * 1e-9);
  }
  std::ofstream csv_file;
  if (!o.csv.empty()) {
    csv_file.open(o.csv);
    if (!csv_file) throw std::invalid_argument("--csv: cannot write '" + o.csv + "'");
  }
  std::ostream& csv = o.csv.empty() ? std::cout : csv_file;
  sweep::write_csv_header(csv);
  nlohmann::json json = nlohmann::json::array();
  std::vector<sweep::Row> all;
  const std::size_t total = grid.shapes.size() * grid.backends.size();
  const auto start = std::chrono::steady_clock::now();
  for (const sweep::ShapePoint& shape : grid.shapes) {
    std::vector<sweep::Point> points;
    for (const std::string& spec : grid.backends) points.push_back(sweep::make_point(spec, shape));
    for (const sweep::Row& row : sweep::measure_shape(points, machine, o.timing, HYDRAGEN_COMMIT)) {
      sweep::write_csv_row(csv, row);
      json.push_back(sweep::to_json(row));
      all.push_back(row);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double left = elapsed / static_cast<double>(all.size()) * static_cast<double>(total - all.size());
      std::fprintf(stderr, "[%zu/%zu %.0fs, ~%.0fs left] %s:%s B=%d P=%d S=%d: ", all.size(), total, elapsed, left,
                   row.point.label().c_str(), std::string(storage_name(row.point.storage)).c_str(), shape.batch,
                   shape.prefix, shape.suffix);
      if (row.m.status == "ok") {
        std::fprintf(stderr, "%.4f ms", row.m.median_ms);
        if (row.m.floor_ms > 0) std::fprintf(stderr, ", %.2fx floor", row.m.median_ms / row.m.floor_ms);
        std::fprintf(stderr, "\n");
      } else {
        std::fprintf(stderr, "%s (%s)\n", row.m.status.c_str(), row.m.detail.substr(0, 160).c_str());
      }
    }
    csv.flush();
  }
  if (!o.json.empty()) {
    std::ofstream json_file(o.json);
    if (!json_file) throw std::invalid_argument("--json: cannot write '" + o.json + "'");
    json_file << json.dump(1) << '\n';
  }
  if (!o.csv.empty()) print_table(all);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Times attention backends over a grid of problems (prefix + suffix trees); one CSV row per point.",
               "hydragen-sweep"};
  std::string presets;
  for (const std::string& n : sweep::preset_names()) presets += "\n  " + n + ": " + sweep::preset_description(n);
  app.add_option("--preset", o.preset, "a named grid:" + presets);
  app.add_option("--backends", o.backends, "backend[:option=value...][:shared|redundant], comma separated (e.g. cuda-hydragen:form=wide,cuda-flash:redundant)")->delimiter(',');
  app.add_option("--dtype", o.dtypes, "fp32|fp16|bf16, comma separated")->delimiter(',');
  app.add_option("--batch", o.batch, "batch sizes B")->delimiter(',');
  app.add_option("--prefix", o.prefix, "shared prefix lengths P")->delimiter(',');
  app.add_option("--suffix", o.suffix, "suffix lengths S (every sequence)")->delimiter(',');
  app.add_option("--q-len", o.q_len, "queries per sequence")->delimiter(',');
  app.add_option("--q-heads", o.q_heads, "query heads Hq")->delimiter(',');
  app.add_option("--kv-heads", o.kv_heads, "key/value heads Hkv")->delimiter(',');
  app.add_option("--head-dim", o.head_dim, "head dimension D")->delimiter(',');
  app.add_option("--replays", o.timing.gpu_replays, "timed CUDA graph replays per point (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cpu-replays", o.timing.cpu_replays, "timed runs per CPU point")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.timing.seed, "seed of the N(0,1) inputs");
  app.add_option("--csv", o.csv, "write the CSV here (default: stdout)");
  app.add_option("--json", o.json, "also write the rows as a JSON array here");
  app.add_flag("--points", o.points, "print the grid's points (B,P,S,q_len,Hq,Hkv,D), one a line, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return run(o, app);
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-sweep: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hydragen-sweep: failed: " << e.what() << "\n";
    return 1;
  }
}
