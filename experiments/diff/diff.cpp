#include "diff/diff.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "diff/problem_from_options.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/memory_need.hpp"
#include "hydragen/problem.hpp"

namespace hydragen::diff {

DiffResult run_diff(const Options& options, const BackendRegistry& registry) {
  const AttentionBackend& chosen = registry.get(options.backend);
  const AttentionBackend& reference = registry.get("reference");
  if (const std::string why = chosen.memory().unavailable_reason(); !why.empty()) {
    throw std::invalid_argument("backend '" + chosen.name() + "' cannot run here: " + why);
  }

  // Everything that can be judged from the options is checked before inputs are generated; a batch
  // whose queries alone cannot fit is refused before even its tree is built.
  const double queries = static_cast<double>(options.batch.value_or(1)) * options.q_len * options.q_heads * options.head_dim;
  if (const double fp64_q = queries * 2 * sizeof(double);  // Q and O of the fp64 problem and reference
      fp64_q > static_cast<double>(host_memory().available_bytes())) {
    throw std::invalid_argument("the problem does not fit: its queries and outputs alone need " +
                                format_bytes(static_cast<std::size_t>(std::min(fp64_q, 1e19))) + " of host memory, " +
                                format_bytes(host_memory().available_bytes()) + " available");
  }
  const SharingRates rates = detection_rates(options, chosen.memory());
  const SharingTree tree = tree_from_options(options, rates);
  const AttentionShape shape = shape_from_options(options, tree);
  validate_problem(shape, tree);
  resolve_options(chosen.name(), chosen.options(), options.plan_options);
  if (const Support support = support_for(chosen, shape, tree, options.storage); !support.ok) {
    throw Unsupported("backend '" + chosen.name() + "' does not support " + shape.describe() + " with " +
                      std::string(storage_name(options.storage)) + " storage: " + support.reason);
  }

  // Nothing is drawn for a problem that cannot fit: refused in well under a second.
  const MemoryNeed need = diff_memory_need(chosen, reference, shape, tree, options.storage, options.plan_options);
  if (const std::string why = memory_refusal(need, chosen.memory(), "the fp64 problem and reference, the staged inputs and outputs",
                                             "the staged inputs and outputs, the plan's workspace");
      !why.empty()) throw std::invalid_argument("the problem does not fit: " + why);

  return DiffResult{BackendChoice{chosen.name(), options.storage, false, options.plan_options}.label(), options.storage,
                    shape, tree_label(options, tree, rates),
                    check_backend(chosen, reference_problem(shape, tree, options, reference), options.storage,
                                  options.plan_options)};
}

ReferencedProblem reference_problem(const AttentionShape& shape, const SharingTree& tree, const Options& options,
                                    const AttentionBackend& reference) {
  Problem problem = make_problem(shape, tree, options.seed, options.logit_scale);
  // Its values are the dtype's already: the reference reads them as fp64 without a second copy.
  problem.shape.dtype = DType::fp64;
  Results results = run_backend(reference, problem);
  problem.shape.dtype = shape.dtype;
  return {std::move(problem), std::move(results)};
}

MemoryNeed diff_memory_need(const AttentionBackend& backend, const AttentionBackend& reference,
                            const AttentionShape& shape, const SharingTree& tree, Storage storage,
                            const PlanOptions& plan_options) {
  AttentionShape exact = shape;
  exact.dtype = DType::fp64;
  const std::size_t problem = problem_bytes(shape, tree), results = results_bytes(shape);
  // The reference's turn: the problem, its fp64 run, its results fetched. Then the backend's: the
  // problem and the reference's results, its run, its results fetched.
  const std::size_t reference_turn = problem + backend_need(reference, exact, tree, Storage::shared, {}).host + results;
  const MemoryNeed run = backend_need(backend, shape, tree, storage, plan_options);
  return {std::max(reference_turn, problem + 2 * results + run.host), run.device};
}

Comparison check_backend(const AttentionBackend& backend, const ReferencedProblem& p, Storage storage,
                         const PlanOptions& plan_options) {
  const Results out = run_backend(backend, p.problem, storage, plan_options);
  return compare(out, p.reference, tolerance_for(p.problem.shape.dtype, logit_bound(p.problem)));
}

Support support_for(const AttentionBackend& backend, const AttentionShape& shape, const SharingTree& tree,
                    Storage storage) {
  return backend.supports(shape, storage == Storage::shared ? tree : tree.flattened());
}

std::string summary_line(const DiffResult& r) {
  return "backend=" + r.backend + " storage=" + std::string(storage_name(r.storage)) + " " + r.shape.describe() +
         " tree=" + r.tree + " " + comparison_text(r.shape, r.comparison);
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string backend_list(const BackendRegistry& registry) {
  const std::vector<const AttentionBackend*> backends = registry.all();
  std::size_t width = 0;
  for (const auto* b : backends) width = std::max(width, b->name().size());
  std::string text;
  for (const auto* b : backends) {
    const std::string why = b->memory().unavailable_reason();
    std::string name = b->name();
    name.resize(width, ' ');
    std::string memory(b->memory().name());
    memory.resize(std::max<std::size_t>(memory.size(), 4), ' ');
    text += name + "  " + memory + "  " + (why.empty() ? "available" : "unavailable (" + why + ")") + "  " +
            b->summary() + "\n";
    if (const std::string options = describe_options(b->options()); !options.empty()) {
      text += std::string(width + 2, ' ') + "options: " + options + "\n";
    }
  }
  return text;
}

}  // namespace hydragen::diff
