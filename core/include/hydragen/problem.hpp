#pragma once
// A concrete attention problem with host data, and how it is staged into a backend's memory.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hydragen/attention.hpp"

namespace hydragen {

struct Problem {
  AttentionShape shape;
  SharingTree tree;
  std::vector<double> q;                  // [B, q_len, Hq, D]; each value exactly representable in shape.dtype
  std::vector<std::vector<double>> k, v;  // per segment: [length, Hkv, D]; likewise
};

// Draws Q, K, V from N(0, 1) with a fixed seed (never zeros), multiplies Q by q_scale (scores then
// have a spread of about q_scale: 1e4 gives the extreme-logit cases) and rounds every value through
// shape.dtype, so the fp64 reference sees exactly what the backend sees. Validates the problem.
Problem make_problem(const AttentionShape& shape, const SharingTree& tree, std::uint64_t seed, double q_scale = 1.0);

// The same values under another dtype (rounded through it); used to hand a problem to the fp64 reference.
Problem with_dtype(const Problem& problem, DType dtype);

// An upper bound on |score|: scale * max ||q|| * max ||k|| over all rows. Tolerances grow with it,
// because a score's rounding error in fp32 is proportional to its magnitude.
double logit_bound(const Problem& problem);

// How the KV cache is laid out for a run. `shared`: one copy of each segment, read by every sequence
// below it (the vLLM/PagedAttention baseline). `redundant`: every sequence owns a full copy of its
// path (tree.flattened(); the paper's FlashAttention baseline; memory grows with B x path).
enum class Storage { shared, redundant };
std::string_view storage_name(Storage storage);
Storage parse_storage(std::string_view text);  // throws std::invalid_argument naming the text

// How the command lines name a backend run: "name[:option=value...][:shared|redundant]", e.g.
// "cuda-hydragen:form=wide", "cuda-flash:redundant". Fields after the name may come in any order.
struct BackendChoice {
  std::string backend;
  Storage storage = Storage::shared;
  bool storage_named = false;  // the spec named the storage (else the default, shared)
  PlanOptions options;
  // The backend with its options, without the storage ("cuda-hydragen:form=wide"): the CSV's backend column.
  std::string label() const;
};
// Throws std::invalid_argument naming the field that is neither a storage nor name=value.
BackendChoice parse_backend_choice(std::string_view spec);

// O and LSE in fp64, whatever the backend's dtype.
struct Results {
  std::vector<double> o;    // [B, q_len, Hq, D]
  std::vector<double> lse;  // [B, q_len, Hq]
};

// What make_problem draws, without drawing it: a StagedProblem built from a spec holds the same
// values, generated straight into the dtype (a sweep point can be gigabytes in fp64).
struct ProblemSpec {
  AttentionShape shape;
  SharingTree tree;
  std::uint64_t seed = 0;
  double q_scale = 1.0;
};

// A problem's tensors in a backend's memory, laid out for a storage, with outputs allocated.
// Owns every buffer; nothing leaks if construction throws part-way.
class StagedProblem {
 public:
  StagedProblem(const DeviceMemory& memory, const Problem& problem, Storage storage);
  // The tensors of make_problem(spec.shape, spec.tree, spec.seed, spec.q_scale), bit for bit.
  StagedProblem(const DeviceMemory& memory, const ProblemSpec& spec, Storage storage);

  const AttentionShape& shape() const { return shape_; }
  const SharingTree& tree() const { return tree_; }  // flattened for `redundant`
  const AttentionInputs& inputs() const { return inputs_; }
  const AttentionOutputs& outputs() const { return outputs_; }

  void poison_outputs() const;  // fills O and LSE with 0xFF bytes: NaN in every float format
  Results fetch() const;        // copies O and LSE back and widens them to fp64

 private:
  // The encoded bytes of Q (segment -1), or of segment i's K or V.
  enum class Kind { q, k, v };
  using Source = std::function<std::vector<std::byte>(Kind kind, int segment)>;
  StagedProblem(const DeviceMemory& memory, const AttentionShape& shape, const SharingTree& tree, Storage storage,
                const Source& source);

  const DeviceMemory* memory_;
  AttentionShape shape_;
  SharingTree tree_;
  std::vector<Buffer> buffers_;
  AttentionInputs inputs_;
  AttentionOutputs outputs_;
};

// Plans, stages, poisons the outputs, runs once and fetches: the whole path a correctness check takes.
Results run_backend(const AttentionBackend& backend, const Problem& problem, Storage storage = Storage::shared,
                    const PlanOptions& options = {});

}  // namespace hydragen
