// A project outside this repository: a toy attention backend (naive fp64 loops over each sequence's
// path), registered in its own registry and checked against the installed fp64 reference by the
// installed harness (check_backend: the repository's own cases), then on a problem of its own with
// make_problem, run_backend, tolerance_for and compare. Exits 0 when everything passes.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/harness.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/registry.hpp"
#include "hydragen/tree_spec.hpp"

namespace {

using namespace hydragen;

// Query t of sequence s sees its path's tokens but the last q_len - 1 - t (causal within its leaf).
class NaivePlan final : public AttentionPlan {
 public:
  NaivePlan(const AttentionShape& shape, const SharingTree& tree) : shape_(shape), tree_(tree) {}

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    check_io(shape_, tree_, in, out);
    const int d = shape_.head_dim, g = shape_.q_heads / shape_.kv_heads;
    const auto* q = static_cast<const double*>(in.q.data);  // [B, q_len, Hq, D]
    auto* o = static_cast<double*>(out.o.data);             // [B, q_len, Hq, D]
    auto* lse = static_cast<double*>(out.lse.data);         // [B, q_len, Hq]
    for (int s = 0; s < shape_.num_seqs; ++s) {
      for (int t = 0; t < shape_.q_len; ++t) {
        const long long visible = tree_.path_length(s) - (shape_.q_len - 1 - t);
        for (int h = 0; h < shape_.q_heads; ++h) {
          const std::size_t row = ((static_cast<std::size_t>(s) * shape_.q_len + t) * shape_.q_heads + h);
          std::vector<double> scores, values;  // per visible token: its score and its V row
          long long seen = 0;
          for (int segment : tree_.path(s)) {
            const auto* k = static_cast<const double*>(in.k[segment].data);  // [length, Hkv, D]
            const auto* v = static_cast<const double*>(in.v[segment].data);
            for (int p = 0; p < tree_.length(segment) && seen < visible; ++p, ++seen) {
              const std::size_t kv = (static_cast<std::size_t>(p) * shape_.kv_heads + h / g) * d;
              double score = 0;
              for (int i = 0; i < d; ++i) score += q[row * d + i] * k[kv + i];
              scores.push_back(score * shape_.scale);
              values.insert(values.end(), v + kv, v + kv + d);
            }
          }
          double top = -std::numeric_limits<double>::infinity(), sum = 0;
          for (double x : scores) top = std::max(top, x);
          for (int i = 0; i < d; ++i) o[row * d + i] = 0;
          for (std::size_t j = 0; j < scores.size(); ++j) {
            const double w = std::exp(scores[j] - top);
            sum += w;
            for (int i = 0; i < d; ++i) o[row * d + i] += w * values[j * d + i];
          }
          for (int i = 0; i < d && sum > 0; ++i) o[row * d + i] /= sum;
          lse[row] = sum > 0 ? top + std::log(sum) : -std::numeric_limits<double>::infinity();
        }
      }
    }
  }

 private:
  AttentionShape shape_;
  SharingTree tree_;
};

std::unique_ptr<AttentionBackend> naive_backend() {
  BackendSpec spec;
  spec.name = "toy-naive";
  spec.summary = "naive fp64 loops over each sequence's path (an outside project's backend)";
  spec.memory = &host_memory();
  spec.supports = [](const AttentionShape& shape, const SharingTree&) {
    return shape.dtype == DType::fp64 ? Support::yes() : Support::no("fp64 only");
  };
  spec.plan = without_options([](const AttentionShape& shape, const SharingTree& tree) {
    return std::unique_ptr<AttentionPlan>(new NaivePlan(shape, tree));
  });
  spec.workspace_bytes = without_options([](const AttentionShape&, const SharingTree&) { return std::size_t{0}; });
  return make_backend(std::move(spec));
}

}  // namespace

int main() {
  BackendRegistry mine;
  mine.add(naive_backend());
  const AttentionBackend& toy = mine.get("toy-naive");
  // The installed harness: every case the repository's own backends are held to, in every dtype the
  // toy takes (fp64), both storages.
  const HarnessReport report = check_backend(toy);
  for (const std::string& failure : report.failures) std::printf("FAIL %s\n", failure.c_str());
  std::printf("%s: %d harness checks, %zu failed; %zu backends in the installed registry\n", toy.name().c_str(), report.checks,
              report.failures.size(), list_backends().size());
  // And one problem of its own against the installed reference, as a kernel test would.
  const Problem problem = make_problem(make_shape(8, 2, 2, 2, 32, DType::fp64), TreeSpec::parse("2x5/2x1-9").build(8, 12, 3), 7);
  const Comparison cmp = compare(run_backend(toy, problem), run_backend(backend("reference"), problem),
                                 tolerance_for(DType::fp64, logit_bound(problem)));
  std::printf("depth 4, ragged: %s\n", cmp.summary().c_str());
  return report.ok() && cmp.pass ? 0 : 1;
}
