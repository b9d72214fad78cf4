#include "hydragen/attention.hpp"

#include <stdexcept>

#include "hydragen/errors.hpp"

namespace hydragen {

void validate_problem(const AttentionShape& shape, const SharingTree& tree) {
  shape.validate();
  if (tree.num_seqs() != shape.num_seqs) {
    throw std::invalid_argument("AttentionShape.num_seqs = " + std::to_string(shape.num_seqs) +
                                " but the sharing tree has " + std::to_string(tree.num_seqs()) + " sequences");
  }
  for (int s = 0; s < tree.num_seqs(); ++s) {
    const int leaf_len = tree.length(tree.leaf(s));
    if (leaf_len < shape.q_len - 1) {
      throw std::invalid_argument("sequence " + std::to_string(s) + ": leaf segment " + std::to_string(tree.leaf(s)) +
                                  " has " + std::to_string(leaf_len) + " tokens, but q_len = " +
                                  std::to_string(shape.q_len) + " causal queries need at least q_len - 1 = " +
                                  std::to_string(shape.q_len - 1));
    }
  }
}

namespace {
void check_tensor(const std::string& name, const void* data, DType dtype, std::size_t numel, DType want_dtype,
                  std::size_t want_numel) {
  if (want_numel == 0) return;  // an empty segment may be a null view
  if (data == nullptr) throw std::invalid_argument(name + ": null data pointer");
  if (dtype != want_dtype) {
    throw std::invalid_argument(name + ": dtype " + std::string(dtype_name(dtype)) + " but the problem is " +
                                std::string(dtype_name(want_dtype)));
  }
  if (numel < want_numel) {
    throw std::invalid_argument(name + ": buffer holds " + std::to_string(numel) + " elements, the shape needs " +
                                std::to_string(want_numel));
  }
}
}  // namespace

void check_io(const AttentionShape& shape, const SharingTree& tree, const AttentionInputs& inputs,
              const AttentionOutputs& outputs) {
  const std::size_t rows = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
  const std::size_t kv_row = static_cast<std::size_t>(shape.kv_heads) * shape.head_dim;
  check_tensor("inputs.q", inputs.q.data, inputs.q.dtype, inputs.q.numel, shape.dtype, rows * shape.head_dim);
  const auto segments = static_cast<std::size_t>(tree.num_segments());
  for (const auto* kv : {&inputs.k, &inputs.v}) {
    if (kv->size() != segments) {
      throw std::invalid_argument(std::string(kv == &inputs.k ? "inputs.k" : "inputs.v") + " has " +
                                  std::to_string(kv->size()) + " segments, the tree has " + std::to_string(segments));
    }
  }
  for (std::size_t i = 0; i < segments; ++i) {
    const std::size_t want = static_cast<std::size_t>(tree.length(static_cast<int>(i))) * kv_row;
    for (const auto* kv : {&inputs.k, &inputs.v}) {
      const ConstTensor& t = (*kv)[i];
      const std::string name = (kv == &inputs.k ? "inputs.k[" : "inputs.v[") + std::to_string(i) + "]";
      if (want > 0) require_same_dtype("inputs.q", inputs.q.dtype, name, t.dtype);
      check_tensor(name, t.data, t.dtype, t.numel, shape.dtype, want);
    }
  }
  check_tensor("outputs.o", outputs.o.data, outputs.o.dtype, outputs.o.numel, shape.dtype, rows * shape.head_dim);
  check_tensor("outputs.lse", outputs.lse.data, outputs.lse.dtype, outputs.lse.numel, lse_dtype(shape.dtype), rows);
}

std::vector<long long> run_lengths(const AttentionShape& shape, const SharingTree& tree, const AttentionInputs& inputs) {
  std::vector<long long> lengths(static_cast<std::size_t>(tree.num_segments()));
  for (int i = 0; i < tree.num_segments(); ++i) lengths[static_cast<std::size_t>(i)] = tree.length(i);
  if (inputs.leaf_lengths == nullptr) return lengths;
  for (int s = 0; s < tree.num_seqs(); ++s) {
    const int leaf = tree.leaf(s), length = inputs.leaf_lengths[s];
    if (length < shape.q_len - 1 || length > tree.length(leaf)) {
      throw std::invalid_argument("inputs.leaf_lengths[" + std::to_string(s) + "] = " + std::to_string(length) +
                                  ": sequence " + std::to_string(s) + "'s leaf holds " + std::to_string(tree.length(leaf)) +
                                  " tokens and its q_len = " + std::to_string(shape.q_len) +
                                  " queries need at least " + std::to_string(shape.q_len - 1));
    }
    lengths[static_cast<std::size_t>(leaf)] = length;
  }
  return lengths;
}

namespace {
// What plan() and workspace_bytes() both ask first: a valid problem, options the backend takes
// (returned resolved), and its support.
PlanOptions checked(const AttentionBackend& b, const AttentionShape& shape, const SharingTree& tree,
                    const PlanOptions& options) {
  validate_problem(shape, tree);
  PlanOptions resolved = resolve_options(b.name(), b.options(), options);
  const Support support = b.supports(shape, tree);
  if (!support.ok) throw Unsupported("backend '" + b.name() + "' does not support " + shape.describe() + ": " + support.reason);
  return resolved;
}
}  // namespace

std::unique_ptr<AttentionPlan> AttentionBackend::plan(const AttentionShape& shape, const SharingTree& tree,
                                                      const PlanOptions& options) const {
  return make_plan(shape, tree, checked(*this, shape, tree, options));
}

std::size_t AttentionBackend::workspace_bytes(const AttentionShape& shape, const SharingTree& tree,
                                              const PlanOptions& options) const {
  return count_workspace_bytes(shape, tree, checked(*this, shape, tree, options));
}

namespace {
class SpecBackend final : public AttentionBackend {
 public:
  explicit SpecBackend(BackendSpec spec) : spec_(std::move(spec)) {}
  std::string name() const override { return spec_.name; }
  std::string summary() const override { return spec_.summary; }
  const DeviceMemory& memory() const override { return *spec_.memory; }
  Support supports(const AttentionShape& shape, const SharingTree& tree) const override {
    return spec_.supports(shape, tree);
  }
  std::vector<PlanOption> options() const override { return spec_.options; }
  std::vector<PlanOptions> variants() const override { return spec_.variants; }

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape& shape, const SharingTree& tree,
                                           const PlanOptions& options) const override {
    return spec_.plan(shape, tree, options);
  }
  std::size_t count_workspace_bytes(const AttentionShape& shape, const SharingTree& tree,
                                    const PlanOptions& options) const override {
    return spec_.workspace_bytes(shape, tree, options);
  }

 private:
  BackendSpec spec_;
};
}  // namespace

std::unique_ptr<AttentionBackend> make_backend(BackendSpec spec) {
  if (spec.name.empty() || spec.memory == nullptr || !spec.supports || !spec.plan || !spec.workspace_bytes) {
    throw std::invalid_argument(
        "make_backend: a backend needs a name, a memory, a supports rule, a plan factory and its workspace count");
  }
  if (spec.variants.empty()) throw std::invalid_argument("make_backend: '" + spec.name + "' needs at least its default variant");
  for (const PlanOptions& variant : spec.variants) resolve_options(spec.name, spec.options, variant);
  return std::make_unique<SpecBackend>(std::move(spec));
}

std::string explain(const std::vector<PlanDecision>& decisions) {
  std::string out;
  for (const PlanDecision& d : decisions) out += d.rule + ": " + d.choice + " -- " + d.reason + " [" + d.inputs + "]\n";
  return out;
}

std::string decisions_cell(const std::vector<PlanDecision>& decisions) {
  std::string out;
  for (const PlanDecision& d : decisions) {
    out += (out.empty() ? "" : ";") + d.rule + "=" + d.choice.substr(0, d.choice.find(" ("));
  }
  return out;
}

}  // namespace hydragen
