#include <omp.h>

#include "cpu_common.hpp"
#include "plans.hpp"

namespace hydragen::cpu {

namespace {

class FlatPlan final : public AttentionPlan {
 public:
  FlatPlan(const AttentionShape& shape, const SharingTree& tree)
      : shape_(shape), tree_(tree), threads_(omp_get_max_threads()), workspaces_(threads_) {
    for (Workspace& ws : workspaces_) ws.reserve(shape.q_len * shape.group_size(), shape.head_dim);
    q32_.resize(static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * shape.head_dim);
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    check_io(shape_, tree_, in, out);
    widen_queries(shape_, in.q, q32_);
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
          const long long len = tree_.length(segment);
          attend_tokens(q, kv_slice(shape_, in.k[segment], kv_head), kv_slice(shape_, in.v[segment], kv_head), 0, len,
                        row_limits(shape_, 1, len, tree_.is_leaf(segment)), shape_.scale, acc, ws);
        }
        write_rows(shape_, acc, 0, seq, kv_head, out);
      }
    }
  }

 private:
  AttentionShape shape_;
  SharingTree tree_;
  int threads_;
  std::vector<Workspace> workspaces_;  // one per thread
  std::vector<float> q32_;             // [B, q_len, Hq, D] widened queries
};

}  // namespace

std::unique_ptr<AttentionPlan> make_flat_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<FlatPlan>(shape, tree);
}

}  // namespace hydragen::cpu
