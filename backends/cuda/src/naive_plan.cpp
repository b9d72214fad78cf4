// cuda-naive's plan: one block per query row, scores materialized in a [queries, max path] workspace.
#include <algorithm>

#include "cuda_plan.hpp"
#include "kernels/launch.hpp"
#include "plans.hpp"

namespace hydragen::cuda {

namespace {

class NaivePlan final : public CudaPlan {
 public:
  NaivePlan(const AttentionShape& shape, const SharingTree& tree)
      : CudaPlan(shape, tree),
        path_offsets_(upload(path_offsets(tree))),
        path_segments_(upload(path_segments(tree))),
        max_path_(max_path(tree)),
        scores_(static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * static_cast<std::size_t>(max_path_)) {}

  static std::size_t device_bytes(const AttentionShape& shape, const SharingTree& tree) {
    const std::size_t queries = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
    const std::size_t tables = (static_cast<std::size_t>(tree.num_seqs()) + 1 + path_segments(tree).size()) * sizeof(int);
    return CudaPlan::device_bytes(tree) + tables + queries * static_cast<std::size_t>(max_path(tree)) * sizeof(float);
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) override {
    const cudaStream_t s = bind(in, out, stream);
    NaiveParams p;
    set_inputs(p, in);
    p.path_offsets = path_offsets_.data();
    p.path_segments = path_segments_.data();
    p.scores = scores_.data();
    p.o = out.o.data;
    p.lse = static_cast<float*>(out.lse.data);
    p.q_len = shape_.q_len;
    p.q_heads = shape_.q_heads;
    p.kv_heads = shape_.kv_heads;
    p.max_path = max_path_;
    p.scale = shape_.scale;
    launch_naive(p, shape_.num_seqs * shape_.q_len * shape_.q_heads, shape_.dtype, shape_.head_dim, s);
  }

 private:
  static std::vector<int> path_offsets(const SharingTree& tree) {
    std::vector<int> offsets{0};
    for (int s = 0; s < tree.num_seqs(); ++s) offsets.push_back(offsets.back() + static_cast<int>(tree.path(s).size()));
    return offsets;
  }
  static std::vector<int> path_segments(const SharingTree& tree) {
    std::vector<int> segments;
    for (int s = 0; s < tree.num_seqs(); ++s) segments.insert(segments.end(), tree.path(s).begin(), tree.path(s).end());
    return segments;
  }
  static long long max_path(const SharingTree& tree) {
    long long m = 0;
    for (int s = 0; s < tree.num_seqs(); ++s) m = std::max(m, tree.path_length(s));
    return m;
  }
  DeviceArray<int> path_offsets_, path_segments_;
  long long max_path_;
  DeviceArray<float> scores_;  // [B * q_len * Hq, max_path]
};

}  // namespace

std::unique_ptr<AttentionPlan> make_naive_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<NaivePlan>(shape, tree);
}

std::size_t naive_workspace_bytes(const AttentionShape& shape, const SharingTree& tree) {
  return NaivePlan::device_bytes(shape, tree);
}

}  // namespace hydragen::cuda
