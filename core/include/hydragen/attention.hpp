#pragma once
// The backend-agnostic interface: a backend makes a plan for one (shape, tree); the plan runs.
//
// plan() validates, allocates workspace and builds the schedule; run() only launches, so it can be
// captured in a CUDA graph and timed without allocation. Outputs are O and LSE, so results compose.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hydragen/indexing.hpp"
#include "hydragen/memory.hpp"
#include "hydragen/plan_options.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "hydragen/tensor.hpp"

namespace hydragen {

struct AttentionInputs {
  ConstTensor q;               // [B, q_len, Hq, D], shape.dtype
  std::vector<ConstTensor> k;  // per segment: [length(segment), Hkv, D], shape.dtype
  std::vector<ConstTensor> v;  // per segment: [length(segment), Hkv, D], shape.dtype
  // Decoding into a KV cache that grows: [B] tokens now in each sequence's leaf, in the backend's
  // memory, the plan's leaf lengths being capacities (null: as planned). A query then attends the
  // first leaf_lengths[s] tokens of its leaf (minus its causal tail), so one plan, and one CUDA graph
  // of its run, serves every step until a leaf is full. The unused tail of a leaf must hold finite
  // values (a zero-filled cache does). Host backends check each value against [q_len - 1, capacity];
  // CUDA backends, which cannot read them without waiting, clamp them to [0, capacity].
  const int* leaf_lengths = nullptr;
};

struct AttentionOutputs {
  Tensor o;    // [B, q_len, Hq, D], shape.dtype
  Tensor lse;  // [B, q_len, Hq], lse_dtype(shape.dtype); -inf where a query attends no key
};

// An opaque stream handle (a cudaStream_t for CUDA backends; ignored on the host). Null: default.
struct Stream {
  void* handle = nullptr;
};

// Throws std::invalid_argument naming the field: shape.validate(), the tree's sequence count, and
// leaves too short for the causal queries.
void validate_problem(const AttentionShape& shape, const SharingTree& tree);

// Throws std::invalid_argument naming the tensor: a null pointer (only empty segments may be null),
// a dtype that is not the shape's, or a buffer smaller than the shape needs.
void check_io(const AttentionShape& shape, const SharingTree& tree, const AttentionInputs& inputs,
              const AttentionOutputs& outputs);

// Each segment's tokens for one run on the host: the tree's lengths, with the leaves cut to
// inputs.leaf_lengths when given (each checked against [q_len - 1, capacity]: std::invalid_argument
// naming the sequence). Host backends call it after check_io.
std::vector<long long> run_lengths(const AttentionShape& shape, const SharingTree& tree, const AttentionInputs& inputs);

// One decision a plan made: the rule (e.g. the CUDA planner's, docs/planner-rules.md), what it
// chose, from what, and why.
struct PlanDecision {
  std::string rule;    // e.g. "leaf_layout"
  std::string choice;  // e.g. "beside (12 leaf SMs, ...)": a short word first, details in parentheses
  std::string inputs;  // "name=value" pairs
  std::string reason;  // one line, with the predicted times compared, if any
};
// One decision a line: "rule: choice -- reason [inputs]".
std::string explain(const std::vector<PlanDecision>& decisions);
// "rule=choice;rule=choice", each choice without its parenthesized details: one CSV cell.
std::string decisions_cell(const std::vector<PlanDecision>& decisions);

class AttentionPlan {
 public:
  virtual ~AttentionPlan() = default;
  // Checks the tensors (check_io) and computes O and LSE for the planned problem. A CUDA plan's
  // first run with a new set of tensors uploads their tables (so it cannot be captured in a graph);
  // later runs with the same tensors launch kernels only, and one plan may serve several sets (the
  // layers of a model, each with its own KV cache).
  virtual void run(const AttentionInputs& inputs, const AttentionOutputs& outputs, Stream stream = {}) = 0;
  // How this plan decided to run, in the order decided (the CUDA planner's rules:
  // docs/planner-rules.md); none for a plan that decides nothing.
  virtual std::vector<PlanDecision> decisions() const { return {}; }
};

// Whether a backend handles a problem; if not, why.
struct Support {
  bool ok = true;
  std::string reason;  // empty when ok
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for --list: what it is, dtypes, head dims, trees
  virtual const DeviceMemory& memory() const = 0;
  virtual Support supports(const AttentionShape& shape, const SharingTree& tree) const = 0;
  // The plan options it takes (plan_options.hpp); none by default.
  virtual std::vector<PlanOption> options() const { return {}; }
  // The option sets the test harness checks it under: the defaults first, then each form worth
  // covering on small problems.
  virtual std::vector<PlanOptions> variants() const { return {PlanOptions{}}; }

  // validate_problem, then the options (resolve_options: std::invalid_argument for one it does not
  // take), then supports (throws Unsupported with the reason), then make_plan with every option set.
  std::unique_ptr<AttentionPlan> plan(const AttentionShape& shape, const SharingTree& tree,
                                      const PlanOptions& options = {}) const;
  // The bytes that plan, and one run of it, allocate in memory() beyond the problem's tensors,
  // counted without allocating (the memory check before a problem is staged, memory_need.hpp).
  // Validates as plan() does.
  std::size_t workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options = {}) const;

 protected:
  virtual std::unique_ptr<AttentionPlan> make_plan(const AttentionShape& shape, const SharingTree& tree,
                                                   const PlanOptions& options) const = 0;
  // 0 for a backend that allocates nothing of its own; make_backend requires the count.
  virtual std::size_t count_workspace_bytes(const AttentionShape&, const SharingTree&, const PlanOptions&) const {
    return 0;
  }
};

// Most backends are a name, a memory, a support rule and a plan factory (and perhaps options):
// make_backend assembles one.
struct BackendSpec {
  std::string name;
  std::string summary;
  const DeviceMemory* memory = nullptr;
  std::function<Support(const AttentionShape&, const SharingTree&)> supports;
  // Receives every declared option set (resolve_options).
  std::function<std::unique_ptr<AttentionPlan>(const AttentionShape&, const SharingTree&, const PlanOptions&)> plan;
  // AttentionBackend::workspace_bytes of those plans, from the same rules.
  std::function<std::size_t(const AttentionShape&, const SharingTree&, const PlanOptions&)> workspace_bytes;
  std::vector<PlanOption> options = {};
  std::vector<PlanOptions> variants = {PlanOptions{}};  // each must resolve against `options`
};
std::unique_ptr<AttentionBackend> make_backend(BackendSpec spec);

// BackendSpec::plan (or workspace_bytes) for a backend that takes no options, from make(shape, tree).
template <typename MakePlan>
auto without_options(MakePlan make) {
  return [make](const AttentionShape& shape, const SharingTree& tree, const PlanOptions&) { return make(shape, tree); };
}

}  // namespace hydragen
