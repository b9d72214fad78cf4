// hydragen-decode: a Llama-architecture decoder (one tensor-parallel shard) over a batch sharing a
// prompt, timed end to end (DESIGN.md section 7). One CSV row per point; progress on stderr; a
// point that does not fit is recorded as x from the memory estimate, never attempted.
//
//   hydragen-decode --preset fig3b --csv out/fig3b.csv
//   hydragen-decode --model codellama-13b --tp 8 --mode hydragen,paged --batch 1024 --prefix 16256 --gen-tokens 128
//   torchrun --no-python --nproc-per-node 4 hydragen-decode --rank-env --model codellama-34b --tp 4 ...   (a process per GPU)
//
// Bad usage: exit 2 and one line naming the flag, before anything runs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "csv/csv_records.hpp"
#include "decode/checkpoint.hpp"
#include "decode/communicator.hpp"
#include "decode/launch.hpp"
#include "decode/measure.hpp"
#include "decode/process_group.hpp"
#include "decode/prompts.hpp"
#include "decode/resume.hpp"
#include "flags/flag_checks.hpp"
#include "hydragen/cpu/peaks.hpp"
#include "hydragen/text_file.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/timing.hpp"
#endif

#include "commit.hpp"  // HYDRAGEN_COMMIT, stamped at build time

namespace {

using namespace hydragen;
using namespace hydragen::decode;

struct Flags {
  std::string preset, model = "smoke", modes = "hydragen,paged,flash,no-attention", batch = "8", prefix = "128";
  std::string backend, csv, device = "auto", weights, prompts, tokens_out, groups;
  int layers = 0, tp = 1, gpus = 1, question_len = 0, gen_tokens = 16, runs = 3, warmup = 1, bucket = 16;
  std::uint64_t seed = 1;
  bool resume = false, rank_env = false;
};

using flags::fail;

std::vector<DecodePoint> points_from(const Flags& f, const CLI::App& app) {
  std::vector<DecodePoint> points;
  if (!f.preset.empty()) {
    for (const char* flag : {"--model", "--mode", "--batch", "--prefix", "--question-len", "--gen-tokens", "--groups"}) {
      if (app.count(flag) > 0) fail(flag, "cannot change a --preset's points (--layers, --tp and --backend can)");
    }
    try {
      points = preset_points(f.preset);
    } catch (const std::invalid_argument& e) {
      fail("--preset", e.what());
    }
    if (app.count("--tp") > 0) {
      for (DecodePoint& p : points) p.tp = f.tp;
    }
  } else {
    try {
      model_config(f.model);
    } catch (const std::invalid_argument& e) {
      fail("--model", e.what());
    }
    const std::vector<std::string> modes = flags::split_list("--mode", f.modes);
    for (int b : flags::parse_integers("--batch", f.batch, 1)) {
      for (int p : flags::parse_integers("--prefix", f.prefix, 1)) {
        for (const std::string& m : modes) {
          DecodePoint point;
          point.model = f.model;
          point.tp = f.tp;
          try {
            point.mode = parse_mode(m);
          } catch (const std::invalid_argument& e) {
            fail("--mode", e.what());
          }
          point.batch = b;
          point.prompt_len = p;
          point.question_len = f.question_len;
          point.gen_tokens = f.gen_tokens;
          point.groups = f.groups;
          points.push_back(point);
        }
      }
    }
  }
  for (DecodePoint& p : points) {
    if (f.layers > 0) p.layers = f.layers;
    if (!p.groups.empty()) {  // checked here so that a bad value stops the run before any point
      try {
        decode_groups(p).build(p.batch, p.prompt_len, 1);  // one level, and a batch that divides into it
        if (p.mode == Mode::flash) throw std::invalid_argument("mode flash keeps whole paths: it takes no groups");
      } catch (const std::invalid_argument& e) {
        fail("--groups", e.what());
      }
    }
    const ModelConfig m = model_config(p.model);
    try {
      shard(p.layers > 0 ? with_layers(m, p.layers) : m, p.tp);
    } catch (const std::invalid_argument& e) {
      fail(app.count("--layers") > 0 ? "--layers" : "--tp", e.what());
    }
    if (f.gpus > 1 && p.tp != f.gpus) {
      fail("--gpus", std::to_string(f.gpus) + " GPUs run a model split " + std::to_string(f.gpus) + " ways; the points are TP " +
                         std::to_string(p.tp) + " (give --tp " + std::to_string(f.gpus) + ")");
    }
  }
  return points;
}

Peaks peaks_of([[maybe_unused]] const Runtime& runtime) {  // a CPU-only build has one kind of peaks
#ifdef HYDRAGEN_WITH_CUDA
  if (runtime.memory().name() == "cuda") return cuda::measure_peaks();
#endif
  return cpu::measure_host_peaks();
}

RankLaunch launch_of(const Flags& f) { return RankLaunch{f.gpus, f.rank_env, f.device}; }

// --prompts: one mode's greedy answers to the file's prompts, as token ids (no timing).
int answer(const Flags& f, const CLI::App& app) {
  for (const char* flag : {"--preset", "--batch", "--prefix", "--question-len", "--groups", "--csv", "--resume"}) {
    if (app.count(flag) > 0) fail(flag, "does not go with --prompts (the file gives the batch, the prefix and the questions)");
  }
  if (f.gpus > 1 && f.tp != f.gpus) fail("--tp", "the " + std::to_string(f.gpus) + " ranks run a model split " + std::to_string(f.gpus) + " ways (give --tp " + std::to_string(f.gpus) + ")");
  const ModelConfig full = model_config(f.model);
  const ModelShard sh = shard(f.layers > 0 ? with_layers(full, f.layers) : full, f.tp);
  const std::vector<std::vector<int>> prompts = [&] {
    try {
      return read_prompts(f.prompts, sh.model.vocab);
    } catch (const std::invalid_argument& e) {
      fail("--prompts", e.what());
    }
  }();
  DecoderOptions options;
  try {
    options.mode = app.count("--mode") > 0 ? parse_mode(f.modes) : Mode::hydragen;
  } catch (const std::invalid_argument& e) {
    fail("--mode", std::string(e.what()) + " (--prompts runs one mode)");
  }
  options.backend = f.backend;
  options.bucket = f.bucket;
  std::unique_ptr<WeightSource> weights =
      f.weights.empty() ? random_weights(f.seed) : checkpoint_weights(f.weights, sh.model);
  std::vector<std::vector<int>> answers;
  PromptSharing sharing;
  std::string runtime_name;
  // Each rank lays the prompts out as every other does; rank 0's answers are the model's.
  const auto run_rank = [&](Communicator* comm) {
    const std::unique_ptr<Runtime> runtime = make_runtime(f.device);
    DecoderOptions mine = options;
    if (comm != nullptr) {
      mine.rank = comm->rank();
      mine.comm = comm;
    }
    const PromptSharing laid_out = share_prompts(prompts, sh, *runtime, options.mode);
    std::vector<std::vector<int>> a = answer_prompts(*runtime, sh, *weights, mine, laid_out, f.gen_tokens);
    if (mine.rank == 0) {
      answers = std::move(a);
      sharing = laid_out;
      runtime_name = runtime->name();
    }
  };
  if (f.gpus > 1) {
    on_ranks(launch_of(f), [&](Communicator& comm) { run_rank(&comm); });
    if (f.rank_env && launched_rank().rank != 0) return 0;  // rank 0 writes the answers
  } else {
    run_rank(nullptr);
  }
  std::ofstream file;
  if (!f.tokens_out.empty()) {
    file.open(f.tokens_out);
    if (!file) fail("--tokens-out", "cannot write '" + f.tokens_out + "'");
  }
  std::ostream& out = f.tokens_out.empty() ? std::cout : file;
  for (const auto& a : answers) {
    for (std::size_t i = 0; i < a.size(); ++i) out << (i == 0 ? "" : " ") << a[i];
    out << "\n";
  }
  std::cerr << "hydragen-decode: " << answers.size() << " sequences sharing a " << sharing.prompt.size() << "-token prompt"
            << (sharing.groups.empty() ? "" : " and " + std::to_string(sharing.groups.size()) +
                                                   (sharing.groups.size() == 1 ? " group" : " groups") + " below it")
            << ", " << f.gen_tokens << " tokens each, mode " << mode_name(options.mode) << " on " << runtime_name
            << (f.gpus > 1 ? " x " + std::to_string(f.gpus) + " ranks" : std::string())
            << ", " << weights->describe() << "; detect_sharing: " << sharing.rates.describe() << "\n";
  return 0;
}

std::string seconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", ms / 1e3);
  return text;
}

// --resume: what the --csv file holds already (nothing when it does not exist yet).
Resumed resumed_from(const std::string& path, const std::string& device) {
  try {
    const std::optional<std::string> text = hydragen::read_text_if_exists(path);
    return text ? read_resumed(*text, device, HYDRAGEN_COMMIT) : Resumed{};
  } catch (const std::invalid_argument& e) {
    fail("--resume", "'" + path + "' " + e.what());
  }
}

// The points still to measure: those whose row `resumed` does not hold (each keyed by the backend
// its row would name).
std::vector<DecodePoint> points_to_measure(const std::vector<DecodePoint>& points, const Resumed& resumed, int gpus,
                                           const MeasureConfig& config, const Runtime& runtime) {
  std::vector<DecodePoint> todo;
  for (const DecodePoint& p : points) {
    if (resumed.done.count(point_key(p, gpus, row_backend(p, config, runtime))) == 0) todo.push_back(p);
  }
  return todo;
}

// The points' rows, printed and written as they come (after a resumed file's rows); progress on stderr.
class Report {
 public:
  Report(const Flags& f, std::size_t points, const Resumed& resumed) : points_(points), start_(std::chrono::steady_clock::now()) {
    if (!f.csv.empty()) {
      csv_.open(f.csv, resumed.has_header ? std::ios::app : std::ios::trunc);
      if (!csv_) fail("--csv", "cannot write '" + f.csv + "'");
      if (!resumed.has_header) csv_ << decode_csv_header() << std::flush;
    }
  }

  void header() const {
    std::printf("%-14s %3s %4s %-13s %5s %6s %4s %12s %10s %10s %10s %8s  %s\n", "model", "tp", "gpus", "mode", "B", "P", "gen",
                "tokens/s", "step ms", "allreduce", "attn floor", "status", "backend");
  }

  void row(const std::string& device, const DecodeRow& r) {
    if (csv_.is_open()) csv_ << decode_csv_row(device, HYDRAGEN_COMMIT, r) << std::flush;
    const DecodePoint& p = r.point;
    const std::string extra = (p.groups.empty() ? "" : "  groups " + p.groups) + (r.note.empty() ? "" : "  (" + r.note + ")");
    std::printf("%-14s %3d %4d %-13s %5d %6d %4d %12.1f %10.3f %10.3f %10.3f %8s  %s%s\n", p.model.c_str(), p.tp, r.gpus,
                std::string(mode_name(p.mode)).c_str(), p.batch, p.prompt_len, p.gen_tokens, r.tokens_per_s, r.step_ms,
                r.allreduce_ms, r.attention_floor_ms, r.status.c_str(), r.backend.c_str(), extra.c_str());
    std::fflush(stdout);
    ++done_;
    // A shard's weights are made once per process (13-53 s) and its later points reuse them: the
    // estimate extrapolates the points' time without those builds (after the first point it was 20x).
    if (r.status == "ok" && !r.weights_reused) builds_s_ += r.build_ms / 1000;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double per_point = std::max(0.0, elapsed - builds_s_) / static_cast<double>(done_);
    std::cerr << "[" << done_ << "/" << points_ << "] " << static_cast<int>(elapsed) << " s elapsed, about "
              << static_cast<int>(per_point * static_cast<double>(points_ - done_)) << " s left"
              << (r.status == "ok" ? " (this point: shard " + std::string(r.weights_reused ? "reused, decoder built" : "built") +
                                         " in " + seconds(r.build_ms) + ", prompt prefilled in " + seconds(r.prefill_ms) + ")"
                                   : std::string())
              << "\n";
  }

 private:
  std::ofstream csv_;
  std::size_t points_, done_ = 0;
  double builds_s_ = 0;  // seconds spent making shards' weights so far
  std::chrono::steady_clock::time_point start_;
};

// --gpus N: the model's N shards at once, one per rank (on_ranks).
void run_ranks(const Flags& f, const std::vector<DecodePoint>& points, MeasureConfig config, Report& report) {
  const auto body = [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = make_runtime(f.device);
    if (comm.rank() == 0) {
      std::cerr << "hydragen-decode: " << points.size() << " points on " << f.gpus << " ranks, " << runtime->name()
                << " each; measuring peaks\n";
      config.peaks = peaks_of(*runtime);
      report.header();
    }
    comm.all(true);  // the peaks measured alone
    WeightCache cache(*runtime);  // this rank's shard uploaded once for the points that run it
    for (const DecodePoint& p : points) {
      const DecodeRow r = measure_point_ranks(*runtime, p, config, comm, &cache);
      if (comm.rank() == 0) report.row(runtime->name(), r);
    }
  };
  on_ranks(launch_of(f), body);
}

int run(const Flags& f, const CLI::App& app) {
  if (!f.prompts.empty()) return answer(f, app);
  if (f.resume && f.csv.empty()) fail("--resume", "needs --csv FILE (the file to resume)");
  std::vector<DecodePoint> points = points_from(f, app);
  // A checkpoint is one model's: every point must run it.
  std::unique_ptr<WeightSource> checkpoint;
  if (!f.weights.empty()) {
    for (const DecodePoint& p : points) {
      if (p.model != points.front().model) fail("--weights", "a checkpoint holds one model; the points run " + points.front().model + " and " + p.model);
    }
    const DecodePoint& p = points.front();
    const ModelConfig m = model_config(p.model);
    try {
      checkpoint = checkpoint_weights(f.weights, p.layers > 0 ? with_layers(m, p.layers) : m);
    } catch (const std::exception& e) {
      fail("--weights", e.what());
    }
  }
  MeasureConfig config;
  config.weights = checkpoint.get();
  config.warmup = f.warmup;
  config.runs = f.runs;
  config.bucket = f.bucket;
  config.seed = f.seed;
  config.backend = f.backend;
  // One GPU's runtime; with --gpus each rank makes its own, and this one is made only for --resume,
  // whose rows name the device.
  std::unique_ptr<Runtime> runtime = f.gpus == 1 || f.resume ? make_runtime(f.device) : nullptr;
  Resumed resumed;
  if (f.resume) {
    resumed = resumed_from(f.csv, runtime->name());
    const std::size_t all = points.size();
    points = points_to_measure(points, resumed, f.gpus, config, *runtime);
    std::cerr << "hydragen-decode: --resume: " << all - points.size() << " of " << all << " points already in " << f.csv
              << " from this device at this commit; " << resumed.elsewhere << " rows from elsewhere kept\n";
  }
  Flags writer = f;  // ranks as processes: rank 0 alone writes the CSV
  if (f.rank_env && launched_rank().rank != 0) writer.csv.clear();
  Report report(writer, points.size(), resumed);
  if (f.gpus > 1) {
    runtime.reset();
    run_ranks(f, points, config, report);
    return 0;
  }
  std::cerr << "hydragen-decode: " << points.size() << " points on " << runtime->name() << "; measuring peaks\n";
  config.peaks = peaks_of(*runtime);
  report.header();
  WeightCache cache(*runtime);  // a shard uploaded once for the points that run it
  for (const DecodePoint& p : points) report.row(runtime->name(), measure_point(*runtime, p, config, nullptr, &cache));
  for (const DecodePoint& p : points) {
    if (p.tp == 1) continue;
    std::printf("tp %d: tokens/s is what %d GPUs would do with free communication: this process ran one GPU's shard; "
                "the all-reduces left out carry %lld bytes per token per GPU.\n",
                p.tp, p.tp, static_cast<long long>(shard(model_config(p.model), p.tp).allreduce_bytes_per_token()));
    break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hydragen-decode: end-to-end decoding of a Llama-architecture model (one tensor-parallel shard) "
               "over a batch sharing a prompt; random weights (decode time does not depend on their values)"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Flags f;
  app.add_option("--preset", f.preset, "fig3a | fig3b | tables | fig5 | fig6 | smoke");
  app.add_option("--model", f.model, "codellama-7b | codellama-13b | codellama-34b | yi-6b-200k | smoke");
  app.add_option("--layers", f.layers, "run the first N layers of the model (a shorter run of the same shapes)")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--tp", f.tp, "tensor-parallel ways (with a --preset: instead of its own); one GPU's shard alone unless --gpus")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--gpus", f.gpus,
                 "run all --tp shards at once, one per GPU (NCCL all-reduces; one thread per GPU), or with --device host "
                 "one per thread; also times rank 0's shard alone for the all-reduces' share")
      ->check(flags::decimal<int>())
      ->check(CLI::PositiveNumber);
  app.add_flag("--rank-env", f.rank_env,
               "this process is one rank of several (one per GPU, on one host or many): RANK of WORLD_SIZE, on GPU "
               "LOCAL_RANK, meeting rank 0 at MASTER_ADDR:MASTER_PORT, as torchrun sets them; --gpus is WORLD_SIZE, rank 0 "
               "alone writes the CSV, the rows and the answers");
  app.add_option("--mode", f.modes, "comma list of flash, paged, hydragen, no-attention");
  app.add_option("--backend", f.backend, "attention backend for the attention modes (default: the fastest of the device's)");
  app.add_option("--batch", f.batch, "comma list of batch sizes B");
  app.add_option("--prefix", f.prefix, "comma list of shared prompt lengths P");
  app.add_option("--question-len", f.question_len, "each sequence's own tokens after the prompt, in one step")->check(flags::decimal<int>())->check(CLI::NonNegativeNumber);
  app.add_option("--groups", f.groups,
                 "sharing below the prompt, one level as hydragen-sweep --tree writes it: 8x300-800 (8 groups of B/8 "
                 "sequences sharing 300..800 more tokens each, prefilled once) or copy:8x300-800 (copied into each "
                 "sequence: the prompt alone shared)");
  app.add_option("--gen-tokens", f.gen_tokens, "greedy decode steps timed")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--runs", f.runs, "timed runs per point (median and spread)")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--warmup", f.warmup, "untimed runs first")->check(flags::decimal<int>())->check(CLI::NonNegativeNumber);
  app.add_option("--bucket", f.bucket, "leaf capacity granularity: re-plan and re-capture every N tokens")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--seed", f.seed, "weights and tokens")->check(flags::decimal<std::uint64_t>());
  app.add_option("--prompts", f.prompts, "token ids, one sequence a line: generate --gen-tokens greedy tokens after each (one --mode)");
  app.add_option("--tokens-out", f.tokens_out, "with --prompts: write the generated ids here, one sequence a line (default: stdout)");
  app.add_option("--weights", f.weights, "a Hugging Face Llama checkpoint folder (safetensors) instead of random weights");
  app.add_option("--csv", f.csv, "write one row per point here");
  app.add_flag("--resume", f.resume, "with --csv: keep FILE's rows, skip the points it has from this device at this commit, append the rest");
  app.add_option("--device", f.device, "auto (a GPU when present) | host | cuda")->check(CLI::IsMember({"auto", "host", "cuda"}));
  try {
    app.parse(argc, argv);
    flags::reject_repeats(app);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-decode: " << e.what() << "\n";
    return 2;
  }
  try {
    if (f.rank_env && f.resume) fail("--resume", "does not go with --rank-env (every rank must run the same points)");
    f.gpus = launched_ranks(launch_of(f), app.count("--gpus") > 0);
    return run(f, app);
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-decode: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hydragen-decode: " << e.what() << "\n";
    return 1;
  }
}
