#pragma once
// hydragen-diff --random N: N drawn problems (random_problem.hpp), each checked on every chosen backend
// by the single-problem check's own parts (diff.hpp: the reference made once per problem, then
// check_backend per backend). Prints progress on `err`, one line per failed check on `out` (the
// command that reproduces it), then one summary line.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "diff/options.hpp"
#include "diff/random_problem.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {

// One backend with one set of plan options, as the soak checks it.
struct SoakTarget {
  const AttentionBackend* backend = nullptr;
  PlanOptions options;
  std::string label;  // BackendChoice::label(): what --backend takes to reproduce
};

// options.random_backends; or, when none are named, every available backend except `reference`
// under each of its variants() (the option sets the test harness covers). Throws
// std::invalid_argument for an unknown or unavailable backend, or a plan option it does not take.
std::vector<SoakTarget> soak_targets(const Options& options, const BackendRegistry& registry);

// full_draw_space() narrowed to the dtypes and head dims that at least one target supports (asked
// on a small probe problem), so a soak of CUDA backends draws no problem all of them would skip.
// Throws std::invalid_argument when no target takes any of them.
DrawSpace soak_space(const std::vector<SoakTarget>& targets);

struct BackendTally {
  std::string label;
  long checks = 0, passed = 0, failed = 0, skipped = 0;  // checks = passed + failed; skipped: unsupported problems
};

struct SoakSummary {
  std::uint64_t seed = 0;
  int problems = 0;
  double seconds = 0;
  std::vector<BackendTally> backends;  // in target order
  BackendTally total() const;          // summed, label "all"
};

// The line printed for a failed check: the repro command, then after a shell comment sign (so the
// whole line can be pasted) which problem it was and what went wrong.
std::string failure_line(const Options& problem, int index, int problems, const std::string& label,
                         const std::string& what);

// "random seed=S problems=N checks=.. passed=.. failed=.. skipped=.. seconds=..", then "| label
// checks=.. passed=.. failed=.. skipped=.." per backend.
std::string soak_summary_line(const SoakSummary& summary);

// Runs the soak (options.random problems seeded by options.seed). Throws std::invalid_argument
// before drawing anything for bad backends (soak_targets, soak_space); a check that throws counts
// as failed and is reported like any failure.
SoakSummary run_soak(const Options& options, const BackendRegistry& registry, std::ostream& out, std::ostream& err);

}  // namespace hydragen::diff
