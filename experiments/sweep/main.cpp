// hydragen-sweep: times backends over a grid of problems and writes one CSV row per point
// (DESIGN.md section 7); JSON too with --json, each row's plan explained with --explain. Progress on
// stderr; a point that cannot run is recorded (oom, unsupported, error), never fatal. Ends with a short
// table.
//
//   hydragen-sweep --preset paper-fig4 --csv out/fig4.csv [--resume]
//   hydragen-sweep --backends cuda-flash:redundant,cuda-hydragen --batch 32,1024 --prefix 1024,16384
//
// Bad usage (exit 2, one line on stderr naming the flag) is found before anything is measured or
// written. Rows are flushed one by one as measured, so a sweep killed mid-way keeps every finished
// point; --resume goes on from there.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "csv/csv_records.hpp"
#include "csv_rows.hpp"
#include "flags/flag_checks.hpp"
#include "flags/tree_flag.hpp"
#include "grid.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/detect.hpp"
#include "hydragen/text_file.hpp"
#include "measure.hpp"
#include "point.hpp"

#include "commit.hpp"  // HYDRAGEN_COMMIT, stamped at build time

namespace {

using namespace hydragen;

// The command line as given. CLI11 only splits it: the values are parsed here, so that every
// message names its flag and no bad value falls through to a default.
struct Flags {
  std::string preset, backends;
  std::string dtypes = "bf16", batch = "32", prefix = "1024", suffix = "64";
  std::string q_len = "1", q_heads = "8", kv_heads = "1", head_dim = "128", tree = "prefix", tokens;
  std::string replays = std::to_string(sweep::TimingConfig{}.gpu_replays);
  std::string cpu_replays = std::to_string(sweep::TimingConfig{}.cpu_replays);
  std::string seed = "0";
  std::string csv, json, explain;
  bool points = false, resume = false;
};

// --resume: the rows of the --csv file, none when it is missing or empty (then it gets the header).
struct Resumed {
  bool has_header = false;
  std::vector<sweep::CsvRecord> rows;
};

// What a sweep runs, every value checked.
struct Options {
  sweep::Grid grid;
  sweep::TimingConfig timing;
  std::string csv, json, explain;  // empty: not given
  bool points = false, resume = false;
  Resumed resumed;
};

const std::vector<std::string> kDefaultBackends = {"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"};
const std::vector<const char*> kGridFlags = {"--dtype",    "--batch",    "--prefix", "--suffix", "--q-len", "--q-heads",
                                             "--kv-heads", "--head-dim", "--tree",   "--tokens"};

[[noreturn]] void fail(std::string_view flag, const std::string& why) {
  throw std::invalid_argument(std::string(flag) + ": " + why);
}

// Runs parse, naming the flag in whatever std::invalid_argument it throws.
template <typename Parse>
auto flagged(std::string_view flag, Parse parse) {
  try {
    return parse();
  } catch (const std::invalid_argument& e) {
    fail(flag, e.what());
  }
}

void reject_if_given(const CLI::App& app, const std::vector<const char*>& flags, const std::string& why) {
  for (const char* flag : flags) {
    if (app.count(flag) > 0) throw std::invalid_argument(std::string(flag) + " " + why);
  }
}

using flags::parse_integer;
using flags::parse_list;
using flags::split_list;
constexpr auto sizes = flags::parse_integers;

DType dtype_entry(const std::string& text) {
  std::string known;
  for (DType d : {DType::fp64, DType::fp32, DType::fp16, DType::bf16}) {
    if (text == dtype_name(d)) return d;
    known += (known.empty() ? "" : ", ") + std::string(dtype_name(d));
  }
  fail("--dtype", "'" + text + "' is not one of " + known);
}

// Each spec resolved against its backend (unknown names and options list what there is), and no
// backend, options and storage twice: the CSV could not tell the two apart.
void check_backends(const std::vector<std::string>& specs) {
  std::set<std::pair<std::string, Storage>> seen;
  for (const std::string& spec : specs) {
    const sweep::Point p = flagged("--backends", [&] { return sweep::make_point(spec, {}); });
    flagged("--backends", [&] { return resolve_options(p.backend, backend(p.backend).options(), p.options); });
    if (!seen.emplace(p.label(), p.storage).second) {
      fail("--backends", p.label() + ":" + std::string(storage_name(p.storage)) + " is listed twice");
    }
  }
}

// Every point must be a problem; what a backend cannot run is recorded as unsupported instead.
void check_shapes(const std::vector<sweep::ShapePoint>& shapes) {
  for (const sweep::ShapePoint& s : shapes) {
    if (s.q_heads % s.kv_heads != 0) {
      throw std::invalid_argument("--q-heads " + std::to_string(s.q_heads) + " is not a multiple of --kv-heads " +
                                  std::to_string(s.kv_heads));
    }
    if (s.tokens.empty()) flagged("--tree", [&] { s.tree.check_batch(s.batch); });
    if (s.suffix < s.q_len - 1 && s.tokens.empty()) {  // a detected tree's leaves are checked per point
      throw std::invalid_argument("--q-len " + std::to_string(s.q_len) + " needs --suffix >= " +
                                  std::to_string(s.q_len - 1) + " (causal queries within the suffix), got " +
                                  std::to_string(s.suffix));
    }
  }
}

sweep::Grid grid_from(const Flags& f, const CLI::App& app) {
  sweep::Grid g;
  if (app.count("--preset") > 0) {
    reject_if_given(app, kGridFlags, "cannot change a --preset's grid");
    g = sweep::preset(f.preset);
  } else if (app.count("--tokens") > 0) {
    reject_if_given(app, {"--batch", "--prefix", "--suffix", "--tree"}, "does not apply with --tokens (the file gives the sequences)");
    const int batch = flagged("--tokens", [&] { return static_cast<int>(read_token_lists(f.tokens).size()); });
    g.backends = kDefaultBackends;
    g.shapes = sweep::product(parse_list<DType>("--dtype", f.dtypes, dtype_entry), {batch}, {0}, {0},
                              sizes("--q-len", f.q_len, 1), sizes("--q-heads", f.q_heads, 1),
                              sizes("--kv-heads", f.kv_heads, 1), sizes("--head-dim", f.head_dim, 1));
    for (sweep::ShapePoint& s : g.shapes) s.tokens = f.tokens;
  } else {
    g.backends = kDefaultBackends;
    g.shapes = sweep::product(parse_list<DType>("--dtype", f.dtypes, dtype_entry), sizes("--batch", f.batch, 1),
                              sizes("--prefix", f.prefix, 0), sizes("--suffix", f.suffix, 0),
                              sizes("--q-len", f.q_len, 1), sizes("--q-heads", f.q_heads, 1),
                              sizes("--kv-heads", f.kv_heads, 1), sizes("--head-dim", f.head_dim, 1),
                              parse_list<TreeSpec>("--tree", f.tree, flags::parse_tree));
  }
  if (app.count("--backends") > 0) g.backends = split_list("--backends", f.backends);  // e.g. a preset on others
  check_backends(g.backends);
  check_shapes(g.shapes);
  return g;
}

// Throws unless PATH can be written, leaving no trace: an existing file is opened for appending and
// closed untouched, a new one is created and removed again.
void check_writable(std::string_view flag, const std::string& path) {
  std::error_code ignored;
  const bool existed = std::filesystem::exists(path, ignored);
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) fail(flag, "cannot write '" + path + "': " + std::strerror(errno));
  std::fclose(file);
  if (!existed) std::filesystem::remove(path, ignored);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ignored;
  const auto resolved = [&](const std::string& path) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ignored), ignored);
  };
  return resolved(a) == resolved(b);
}

Resumed read_resumed(const std::string& path) {
  try {
    const std::optional<std::string> text = hydragen::read_text_if_exists(path);
    if (!text) return {};
    return {!text->empty(), sweep::parse_sweep_csv(*text)};
  } catch (const std::invalid_argument& e) {
    fail("--resume", "'" + path + "' " + e.what());
  }
}

Options parse_options(const Flags& f, const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 1) {
      throw std::invalid_argument(option->get_name() + " is given twice (each flag once; lists are comma separated)");
    }
    if (option->count() == 1 && option->get_expected_min() > 0 && option->results().front().empty()) {
      fail(option->get_name(), "empty value");  // e.g. --batch "$UNSET": not the default, not stdout
    }
  }
  if (f.points) {
    reject_if_given(app, {"--csv", "--json", "--explain", "--resume", "--replays", "--cpu-replays", "--seed"},
                    "does not apply with --points (it prints the grid and exits)");
  }
  Options o{grid_from(f, app), {}, f.csv, f.json, f.explain, f.points, f.resume, {}};
  o.timing.gpu_replays = parse_integer("--replays", f.replays, 1);
  o.timing.cpu_replays = parse_integer("--cpu-replays", f.cpu_replays, 1);
  o.timing.seed = parse_integer<unsigned long long>("--seed", f.seed, 0);
  if (app.count("--csv") > 0) check_writable("--csv", o.csv);
  if (app.count("--json") > 0) check_writable("--json", o.json);
  if (app.count("--csv") > 0 && app.count("--json") > 0 && same_file(o.csv, o.json)) {
    fail("--json", "'" + o.json + "' is also --csv");
  }
  if (app.count("--explain") > 0) {
    check_writable("--explain", o.explain);
    for (const auto& [flag, other] : {std::pair{"--csv", o.csv}, std::pair{"--json", o.json}}) {
      if (app.count(flag) > 0 && same_file(o.explain, other)) fail("--explain", "'" + o.explain + "' is also " + flag);
    }
  }
  if (o.resume && app.count("--csv") == 0) throw std::invalid_argument("--resume needs --csv FILE (the file to resume)");
  if (o.resume) o.resumed = read_resumed(o.csv);
  return o;
}

bool takes_value(const CLI::App& app, const std::string& arg) {
  const CLI::Option* option = app.get_option_no_throw(arg);
  return option != nullptr && option->get_expected_min() > 0;
}

// CLI11 names no flag for a stray argument: name the one it follows ("--points x", "--batch 32 64").
void reject_extras(const CLI::App& app, int argc, const char* const argv[]) {
  if (app.remaining().empty()) return;
  const std::string extra = app.remaining().front();
  if (extra.rfind('-', 0) == 0) throw std::invalid_argument("unknown flag " + extra + " (see --help)");
  std::string after;  // the last flag before it
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == extra && !takes_value(app, argv[i - 1])) break;
    if (arg.rfind("--", 0) == 0) after = arg.substr(0, arg.find('='));
  }
  if (!after.empty() && !takes_value(app, after)) {
    throw std::invalid_argument(after + " takes no value, got '" + extra + "'");
  }
  throw std::invalid_argument("unexpected argument '" + extra + "'" + (after.empty() ? "" : " after " + after) +
                              " (lists are comma separated, without spaces; see --help)");
}

// A point as --resume matches it: backend, storage and shape as the CSV writes them.
std::string point_key(const sweep::CsvRecord& row) {
  std::string key;
  for (const char* column : {"backend", "storage", "dtype", "B", "P", "S", "q_len", "Hq", "Hkv", "D", "tree"}) {
    key += row[sweep::csv_column(column)] + ',';
  }
  return key;
}

// The device column measure_shape writes here: the GPU's name for CUDA backends, the host's for the
// others. Without a GPU, CUDA rows say "none" on every machine (and are all "unsupported").
bool on_this_machine(const std::string& device, const sweep::Machine& machine) {
  return device == machine.host || device == (machine.gpu.empty() ? "none" : machine.gpu);
}

// --resume: the points of the rows measured on this machine at this commit, which the sweep skips;
// the other rows stay in the file and their points are measured again.
struct Done {
  std::set<std::string> points;
  std::size_t elsewhere = 0;  // rows from another device or commit
};

Done done_points(const std::vector<sweep::CsvRecord>& rows, const sweep::Machine& machine) {
  Done done;
  const std::size_t device = sweep::csv_column("device"), commit = sweep::csv_column("commit");
  for (const sweep::CsvRecord& row : rows) {
    if (row[commit] == HYDRAGEN_COMMIT && on_this_machine(row[device], machine)) {
      done.points.insert(point_key(row));
    } else {
      ++done.elsewhere;
    }
  }
  return done;
}

// One row, written whole and flushed: a sweep killed later keeps it.
void append_row(std::ostream& csv, const sweep::Row& row) {
  std::ostringstream text;
  sweep::write_csv_row(text, row);
  csv << text.str() << std::flush;
}

// --explain: the row's plan, one rule a line (hydragen-diff --explain's form), under a line naming the
// backend and the point; for a row that did not run, its status and why. Flushed, as the CSV's rows.
void append_explanation(std::ostream& out, const sweep::Row& row) {
  const sweep::ShapePoint& s = row.point.shape;
  out << "== " << row.point.label() << ":" << storage_name(row.point.storage) << " " << dtype_name(s.dtype) << " B=" << s.batch
      << " P=" << s.prefix << " S=" << s.suffix << " q_len=" << s.q_len << " Hq=" << s.q_heads << " Hkv=" << s.kv_heads
      << " D=" << s.head_dim << " tree=" << s.tree_text() << " (" << row.device << ", " << row.commit << "): " << row.m.status
      << "\n";
  if (row.m.status != "ok") {
    out << row.m.detail << "\n";
  } else {
    out << (row.m.explanation.empty() ? "its plan decides nothing: it runs one way\n" : row.m.explanation);
  }
  out << std::flush;
}

void print_progress(const sweep::Row& row, std::size_t done, std::size_t total, double elapsed) {
  const sweep::ShapePoint& s = row.point.shape;
  const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
  std::fprintf(stderr, "[%zu/%zu %.0fs, ~%.0fs left] %s:%s B=%d P=%d S=%d%s: ", done, total, elapsed, left,
               row.point.label().c_str(), std::string(storage_name(row.point.storage)).c_str(), s.batch, s.prefix,
               s.suffix, s.tree_text() == "prefix" ? "" : (" tree=" + s.tree_text()).c_str());
  if (row.m.status == "ok") {
    std::fprintf(stderr, "%.4f ms", row.m.median_ms);
    if (row.m.floor_ms > 0) std::fprintf(stderr, ", %.2fx floor", row.m.median_ms / row.m.floor_ms);
    std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "%s (%s)\n", row.m.status.c_str(), row.m.detail.substr(0, 160).c_str());
  }
}

void print_table(const std::vector<sweep::Row>& rows) {
  std::printf("%-24s %-9s %-5s %5s %6s %4s %3s %3s %4s %10s %8s %-10s %s\n", "backend", "storage", "dtype", "B", "P", "S",
              "Hq", "Hkv", "D", "median_ms", "x_floor", "status", "tree");
  for (const sweep::Row& r : rows) {
    const sweep::ShapePoint& s = r.point.shape;
    const bool ok = r.m.status == "ok";
    std::printf("%-24s %-9s %-5s %5d %6d %4d %3d %3d %4d %10s %8s %-10s %s\n", r.point.label().c_str(),
                std::string(storage_name(r.point.storage)).c_str(), std::string(dtype_name(s.dtype)).c_str(), s.batch,
                s.prefix, s.suffix, s.q_heads, s.kv_heads, s.head_dim, ok ? std::to_string(r.m.median_ms).c_str() : "-",
                ok && r.m.floor_ms > 0 ? std::to_string(r.m.median_ms / r.m.floor_ms).substr(0, 6).c_str() : "-",
                r.m.status.c_str(), s.tree_text().c_str());
  }
}

// The devices' peaks, and for a grid with token files the rates detection weighs partials at.
void print_machine(const sweep::Machine& machine, const sweep::Grid& grid) {
  if (!machine.gpu.empty()) {
    std::fprintf(stderr, "hydragen-sweep: %s: %.0f TFLOP/s bf16 GEMM, %.0f GB/s copy\n", machine.gpu.c_str(),
                 machine.gpu_peaks.flops_per_s * 1e-12, machine.gpu_peaks.bytes_per_s * 1e-9);
  }
  if (machine.host_peaks.flops_per_s > 0) {
    std::fprintf(stderr, "hydragen-sweep: %s: %.0f GFLOP/s fp32 GEMM, %.1f GB/s copy\n", machine.host.c_str(),
                 machine.host_peaks.flops_per_s * 1e-9, machine.host_peaks.bytes_per_s * 1e-9);
  }
  if (std::any_of(grid.shapes.begin(), grid.shapes.end(), [](const sweep::ShapePoint& s) { return !s.tokens.empty(); })) {
    std::fprintf(stderr, "hydragen-sweep: trees detected in token ids at %s\n", machine.sharing.describe().c_str());
  }
}

// The points of each shape still to measure: all of them, less those --resume found done.
std::vector<std::vector<sweep::Point>> points_to_measure(const sweep::Grid& grid, const std::set<std::string>& done,
                                                         std::size_t& skipped) {
  std::vector<std::vector<sweep::Point>> todo;
  for (const sweep::ShapePoint& shape : grid.shapes) {
    std::vector<sweep::Point> points;
    for (const std::string& spec : grid.backends) {
      sweep::Point p = sweep::make_point(spec, shape);
      if (done.count(point_key(sweep::csv_record(sweep::Row{"", "", p, {}}))) > 0) {
        ++skipped;
      } else {
        points.push_back(std::move(p));
      }
    }
    if (!points.empty()) todo.push_back(std::move(points));
  }
  return todo;
}

int run(const Options& o) {
  if (o.points) {  // what experiments/peers/peers.py --points prints for the same preset
    for (const sweep::ShapePoint& s : o.grid.shapes) {
      std::printf("%d,%d,%d,%d,%d,%d,%d%s\n", s.batch, s.prefix, s.suffix, s.q_len, s.q_heads, s.kv_heads, s.head_dim,
                  s.tree_text() == "prefix" ? "" : ("," + s.tree_text()).c_str());
    }
    return 0;
  }
  const Resumed& resumed = o.resumed;
  std::ofstream csv_file;
  if (!o.csv.empty()) {
    csv_file.open(o.csv, resumed.has_header ? std::ios::app : std::ios::trunc);
    if (!csv_file) throw std::runtime_error("--csv: cannot write '" + o.csv + "'");
  }
  std::ostream& csv = o.csv.empty() ? std::cout : csv_file;
  std::ofstream explain_file;
  if (!o.explain.empty()) {
    explain_file.open(o.explain, o.resume ? std::ios::app : std::ios::trunc);  // resumed: the rows measured now
    if (!explain_file) throw std::runtime_error("--explain: cannot write '" + o.explain + "'");
  }
  if (!resumed.has_header) {
    sweep::write_csv_header(csv);
    csv.flush();  // a kill while the peaks are measured leaves a file --resume takes
  }
  std::vector<std::string> names;
  for (const std::string& spec : o.grid.backends) names.push_back(sweep::make_point(spec, {}).backend);
  std::cerr << "hydragen-sweep: " << o.grid.shapes.size() << " problems x " << o.grid.backends.size()
            << " backends; measuring peaks...\n";
  const sweep::Machine machine = sweep::describe_machine(names);
  print_machine(machine, o.grid);
  const Done done = done_points(resumed.rows, machine);
  std::size_t skipped = 0;
  const std::vector<std::vector<sweep::Point>> todo = points_to_measure(o.grid, done.points, skipped);
  if (o.resume) {
    std::cerr << "hydragen-sweep: --resume: skipped " << skipped << " points already measured on this machine at "
              << HYDRAGEN_COMMIT << "; kept " << resumed.rows.size() << " rows, " << done.elsewhere
              << " of them from another device or commit (their points are measured again)\n";
  }

  std::vector<sweep::CsvRecord> records = resumed.rows;  // the CSV's rows, for --json
  std::vector<sweep::Row> measured;
  std::size_t total = 0;
  for (const std::vector<sweep::Point>& points : todo) total += points.size();
  const auto start = std::chrono::steady_clock::now();
  for (const std::vector<sweep::Point>& points : todo) {
    sweep::measure_shape(points, machine, o.timing, HYDRAGEN_COMMIT, [&](const sweep::Row& row) {
      append_row(csv, row);
      if (explain_file.is_open()) append_explanation(explain_file, row);
      records.push_back(sweep::csv_record(row));
      measured.push_back(row);
      print_progress(row, measured.size(), total,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
  }
  if (!o.json.empty()) {
    nlohmann::json json = nlohmann::json::array();
    for (const sweep::CsvRecord& r : records) json.push_back(sweep::to_json(sweep::csv_columns(), r));
    std::ofstream json_file(o.json);
    json_file << json.dump(1) << '\n' << std::flush;
    if (!json_file) throw std::runtime_error("--json: cannot write '" + o.json + "'");
  }
  if (!o.csv.empty() && !measured.empty()) print_table(measured);
  return 0;
}

void bind(CLI::App& app, Flags& f) {
  // Every flag once: a repeat is refused by parse_options rather than silently taking one value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  app.allow_extras();  // reject_extras names the flag a stray argument follows
  std::string presets;
  for (const std::string& n : sweep::preset_names()) presets += "\n  " + n + ": " + sweep::preset_description(n);
  app.add_option("--preset", f.preset, "a named grid:" + presets)->type_name("NAME");
  app.add_option("--backends", f.backends,
                 "backend[:option=value...][:shared|redundant], comma separated (e.g. "
                 "cuda-hydragen:form=wide,cuda-flash:redundant); default cuda-flash:redundant,cuda-flash:shared,"
                 "cuda-hydragen or the preset's")->type_name("SPEC,...");
  app.add_option("--dtype", f.dtypes, "fp32|fp16|bf16 (fp64: the reference backends), comma separated")
      ->type_name("DTYPE,...");
  app.add_option("--batch", f.batch, "batch sizes B, comma separated")->type_name("B,...");
  app.add_option("--prefix", f.prefix, "shared prefix lengths P")->type_name("P,...");
  app.add_option("--suffix", f.suffix, "suffix lengths S (every sequence)")->type_name("S,...");
  app.add_option("--q-len", f.q_len, "queries per sequence (causal within the suffix)")->type_name("N,...");
  app.add_option("--q-heads", f.q_heads, "query heads Hq")->type_name("HQ,...");
  app.add_option("--kv-heads", f.kv_heads, "key/value heads Hkv (each Hq a multiple of each)")->type_name("HKV,...");
  app.add_option("--head-dim", f.head_dim, "head dimension D")->type_name("D,...");
  app.add_option("--tree", f.tree, std::string(flags::kTreeHelp) + "; comma separated")->type_name("TREE,...");
  app.add_option("--tokens", f.tokens,
                 "token ids, one sequence a line: the sharing tree detect_sharing finds in them, instead of --tree "
                 "(the CSV's tree column says tokens:FILE; B is the file's sequences, P and S are 0)")
      ->type_name("FILE");
  app.add_option("--replays", f.replays, "timed CUDA graph replays per point (median reported)")->type_name("N");
  app.add_option("--cpu-replays", f.cpu_replays, "timed runs per CPU point")->type_name("N");
  app.add_option("--seed", f.seed, "seed of the N(0,1) inputs")->type_name("N");
  app.add_option("--csv", f.csv, "write the CSV here (default: stdout)")->type_name("FILE");
  app.add_option("--json", f.json, "also write the CSV's rows as a JSON array here")->type_name("FILE");
  app.add_option("--explain", f.explain,
                 "also write each row's plan here, one rule a line with its reason and inputs as hydragen-diff "
                 "--explain prints it (docs/planner-rules.md), under a line naming the backend and the point; "
                 "with --resume, appended")
      ->type_name("FILE");
  app.add_flag("--resume", f.resume,
               "with --csv: keep FILE's rows, skip the points it has from this machine at this commit, append "
               "the rest");
  app.add_flag("--points", f.points, "print the grid's points (B,P,S,q_len,Hq,Hkv,D[,tree]), one a line, and exit");
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Times attention backends over a grid of problems (prefix + suffix trees); one CSV row per point.",
               "hydragen-sweep"};
  bind(app, flags);
  Options options;
  try {
    app.parse(argc, argv);
    reject_extras(app, argc, argv);
    options = parse_options(flags, app);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "hydragen-sweep: error: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-sweep: error: " << e.what() << "\n";
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::cerr << "hydragen-sweep: failed: " << e.what() << "\n";
    return 1;
  }
}
