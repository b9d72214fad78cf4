#include "diff/soak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>

#include "diff/diff.hpp"
#include "diff/problem_from_options.hpp"
#include "hydragen/attention.hpp"

namespace hydragen::diff {

namespace {

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  return text;
}

std::string tally_text(const BackendTally& t) {
  return "checks=" + std::to_string(t.checks) + " passed=" + std::to_string(t.passed) +
         " failed=" + std::to_string(t.failed) + " skipped=" + std::to_string(t.skipped);
}

// A progress line every twentieth of the run, and at least every 10 s when problems are slow.
class Progress {
 public:
  Progress(int total, std::ostream& err) : total_(total), every_((total + 19) / 20), err_(err) {}
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void after(int done, long failed) {
    const double now = elapsed();
    if (done % every_ != 0 && done != total_ && now - last_ < 10) return;
    last_ = now;
    err_ << "hydragen-diff: random " << done << "/" << total_ << " problems, " << failed << " failed, "
         << seconds_text(now) << " s elapsed, ETA " << seconds_text(now / done * (total_ - done)) << " s\n"
         << std::flush;
  }

 private:
  using Clock = std::chrono::steady_clock;
  int total_, every_;
  std::ostream& err_;
  Clock::time_point start_ = Clock::now();
  double last_ = 0;
};

}  // namespace

std::vector<SoakTarget> soak_targets(const Options& options, const BackendRegistry& registry) {
  std::vector<SoakTarget> targets;
  auto add = [&](const AttentionBackend& backend, const PlanOptions& plan_options) {
    if (const std::string why = backend.memory().unavailable_reason(); !why.empty()) {
      throw std::invalid_argument("backend '" + backend.name() + "' cannot run here: " + why);
    }
    resolve_options(backend.name(), backend.options(), plan_options);
    targets.push_back({&backend, plan_options, BackendChoice{backend.name(), {}, false, plan_options}.label()});
  };
  for (const BackendChoice& choice : options.random_backends) add(registry.get(choice.backend), choice.options);
  if (!targets.empty()) return targets;
  for (const AttentionBackend* backend : registry.all()) {
    if (backend->name() == "reference" || !backend->memory().unavailable_reason().empty()) continue;
    for (const PlanOptions& variant : backend->variants()) add(*backend, variant);
  }
  return targets;
}

DrawSpace soak_space(const std::vector<SoakTarget>& targets) {
  const DrawSpace full = full_draw_space();
  const SharingTree probe = SharingTree::prefix_suffix(4, {1, 2});
  auto anyone_takes = [&](DType dtype, int head_dim) {
    const AttentionShape shape = make_shape(probe.num_seqs(), 1, 2, 1, head_dim, dtype);
    for (const SoakTarget& t : targets) {
      if (t.backend->supports(shape, probe).ok) return true;
    }
    return false;
  };
  DrawSpace space;
  for (DType dtype : full.dtypes) {
    for (int d : full.head_dims) {
      if (!anyone_takes(dtype, d)) continue;
      if (std::find(space.dtypes.begin(), space.dtypes.end(), dtype) == space.dtypes.end()) space.dtypes.push_back(dtype);
      if (std::find(space.head_dims.begin(), space.head_dims.end(), d) == space.head_dims.end()) space.head_dims.push_back(d);
    }
  }
  if (space.dtypes.empty()) {
    throw std::invalid_argument("--random: none of the chosen backends takes any dtype x head dim the soak draws");
  }
  std::sort(space.head_dims.begin(), space.head_dims.end());
  return space;
}

BackendTally SoakSummary::total() const {
  BackendTally all{"all"};
  for (const BackendTally& t : backends) {
    all.checks += t.checks;
    all.passed += t.passed;
    all.failed += t.failed;
    all.skipped += t.skipped;
  }
  return all;
}

std::string failure_line(const Options& problem, int index, int problems, const std::string& label,
                         const std::string& what) {
  return repro_command(problem, label) + "  # FAIL problem " + std::to_string(index) + "/" + std::to_string(problems) +
         ": " + one_line(what);
}

std::string soak_summary_line(const SoakSummary& s) {
  std::string line = "random seed=" + std::to_string(s.seed) + " problems=" + std::to_string(s.problems) + " " +
                     tally_text(s.total()) + " seconds=" + seconds_text(s.seconds);
  for (const BackendTally& t : s.backends) line += " | " + t.label + " " + tally_text(t);
  return line;
}

SoakSummary run_soak(const Options& options, const BackendRegistry& registry, std::ostream& out, std::ostream& err) {
  const std::vector<SoakTarget> targets = soak_targets(options, registry);
  const DrawSpace space = soak_space(targets);
  SoakSummary summary{options.seed, options.random, 0, {}};
  for (const SoakTarget& t : targets) summary.backends.push_back({t.label});

  const AttentionBackend& reference = registry.get("reference");
  Progress progress(options.random, err);
  long failed = 0;
  for (int i = 0; i < options.random; ++i) {
    const Options problem = draw_problem(options.seed, i, space);
    const SharingTree tree = tree_from_options(problem, SharingRates{});  // drawn trees: no token ids to detect in
    const AttentionShape shape = shape_from_options(problem, tree);
    // The inputs and the fp64 reference, made at the first backend that takes the problem and
    // shared by the others.
    std::optional<ReferencedProblem> referenced;
    for (std::size_t b = 0; b < targets.size(); ++b) {
      BackendTally& tally = summary.backends[b];
      if (!support_for(*targets[b].backend, shape, tree, problem.storage).ok) {
        ++tally.skipped;
        continue;
      }
      ++tally.checks;
      std::string what;
      try {
        if (!referenced) {
          validate_problem(shape, tree);
          referenced = reference_problem(shape, tree, problem, reference);
        }
        const Comparison comparison = check_backend(*targets[b].backend, *referenced, problem.storage, targets[b].options);
        if (comparison.pass) {
          ++tally.passed;
          continue;
        }
        what = comparison_text(shape, comparison);
      } catch (const std::exception& e) {  // the single-problem run would exit 1 or 2: report it all the same
        what = std::string("error: ") + e.what();
      }
      ++tally.failed;
      ++failed;
      out << failure_line(problem, i, options.random, targets[b].label, what) << '\n' << std::flush;
    }
    progress.after(i + 1, failed);
  }
  summary.seconds = progress.elapsed();
  return summary;
}

}  // namespace hydragen::diff
