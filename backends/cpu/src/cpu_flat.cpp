#include <omp.h>

#include "cpu_common.hpp"
#include "plans.hpp"

namespace hydragen::cpu {

namespace {

class FlatPlan final : public CpuPlan {
 public:
  FlatPlan(const AttentionShape& shape, const SharingTree& tree)
      : CpuPlan(shape, tree, shape.q_len * shape.group_size()) {}

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    prepare(in, out);
    const int tasks = shape_.num_seqs * shape_.kv_heads;
#pragma omp parallel num_threads(threads_)
    {
      Workspace& ws = workspaces_[omp_get_thread_num()];
      RowMatrix q;
      Partial acc;
#pragma omp for schedule(dynamic)
      for (int task = 0; task < tasks; ++task) {
        const int seq = task / shape_.kv_heads, kv_head = task % shape_.kv_heads;
        gather_rows(shape_, q32_.data(), {seq}, kv_head, q);
        acc.reset(static_cast<int>(q.rows()), shape_.head_dim);
        for (int segment : tree_.path(seq)) {
          const long long len = lengths_[segment];
          attend_tokens(q, kv_slice(shape_, in.k[segment], kv_head), kv_slice(shape_, in.v[segment], kv_head), 0, len,
                        row_limits(shape_, 1, len, tree_.is_leaf(segment)), shape_.scale, acc, ws);
        }
        write_rows(shape_, acc, 0, seq, kv_head, out);
      }
    }
  }
};

}  // namespace

std::size_t flat_workspace_bytes(const AttentionShape& shape, const SharingTree&) {
  return cpu_plan_bytes(shape, shape.q_len * shape.group_size());
}

std::unique_ptr<AttentionPlan> make_flat_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<FlatPlan>(shape, tree);
}

}  // namespace hydragen::cpu
