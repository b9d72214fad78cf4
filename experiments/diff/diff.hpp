#pragma once
// One hydragen-diff run: generate the problem, run the backend under test and the fp64 `reference`,
// compare (DESIGN.md section 5), and the one-line report of it. Also the --list text.
#include <string>

#include "diff/options.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/memory_need.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {

struct DiffResult {
  std::string backend;  // with its plan options, as BackendChoice::label writes it
  Storage storage = Storage::shared;
  AttentionShape shape;
  std::string tree;  // tree_label()
  Comparison comparison;
};

// Throws std::invalid_argument before running anything when the problem is invalid, the backend is
// unknown, cannot run here (its memory is unavailable) or does not support the problem (Unsupported);
// hydragen::OutOfMemory or another std::exception when something fails while running.
DiffResult run_diff(const Options& options, const BackendRegistry& registry);

// A generated problem (the options' shape, tree, seed and logit scale) and the fp64 `reference`
// backend's results on it: what every backend checked on the problem is compared with, computed once.
struct ReferencedProblem {
  Problem problem;
  Results reference;
};
ReferencedProblem reference_problem(const AttentionShape& shape, const SharingTree& tree, const Options& options,
                                    const AttentionBackend& reference);

// What a check of `backend` on the problem needs at its peak: on the host (the fp64 problem, the
// reference's staging, workspace and results, then the backend's staging and results; a host
// backend's own workspace) and on the device (a CUDA backend's staging and workspace). run_diff
// refuses a problem whose need exceeds what is available before drawing anything.
MemoryNeed diff_memory_need(const AttentionBackend& backend, const AttentionBackend& reference,
                            const AttentionShape& shape, const SharingTree& tree, Storage storage,
                            const PlanOptions& plan_options);

// Runs `backend` on the problem (in `storage`, with `plan_options`) and compares it with the
// reference under the dtype's tolerance (DESIGN.md section 5).
Comparison check_backend(const AttentionBackend& backend, const ReferencedProblem& problem, Storage storage,
                         const PlanOptions& plan_options);

// Whether `backend` takes the problem in `storage` (redundant storage hands it the flattened tree):
// the support rule run_diff applies, for callers that skip rather than refuse (the --random soak).
Support support_for(const AttentionBackend& backend, const AttentionShape& shape, const SharingTree& tree,
                    Storage storage);

// The one summary line (no newline): backend, storage, shape, tree, max abs error, relative L2 error,
// LSE error, tolerance, failed counts, worst O and LSE elements, PASS or FAIL (comparison_text, compare.hpp).
std::string summary_line(const DiffResult& result);

// The contract is one line per report: `text` with every line break turned into a space.
std::string one_line(std::string text);

// One line per backend: name, memory, availability (or the unavailable reason), summary; then its
// plan options, if it has any, on a line of their own.
std::string backend_list(const BackendRegistry& registry);

}  // namespace hydragen::diff
