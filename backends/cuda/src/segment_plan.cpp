// The plan of every schedule-driven backend (cuda-flash, cuda-hydragen, cuda-hydragen-cublas): the
// planner's decisions (planner/planner.hpp) made once for the current device, the schedule uploaded,
// and run() one of the launch recipes (LaunchRecipe), a short function each.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate.hpp"
#include "cuda_plan.hpp"
#include "gemm_attention.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/handles.hpp"
#include "kernels/launch.hpp"
#include "measured_plan.hpp"
#include "planner.hpp"
#include "plans.hpp"
#include "tensor_maps.hpp"

namespace hydragen::cuda {

namespace {

constexpr float kLog2e = 1.4426950408889634f;

class SegmentPlan final : public CudaPlan {
 public:
  SegmentPlan(const AttentionShape& shape, const SharingTree& tree, const Planned& planned)
      : CudaPlan(shape, tree),
        decisions_(planned.decisions),
        narrow_(upload(planned.schedule.narrow_items)),
        wide_(upload(planned.schedule.wide_items)),
        wide_worker_items_(upload(planned.schedule.wide_worker_items)),
        cluster_leaf_items_(upload(planned.schedule.cluster_leaf_items)),
        item_segments_(upload(planned.schedule.item_segments)),
        row_query_(upload(planned.schedule.row_query)),
        row_limit_(upload(planned.schedule.row_limit)),
        row_leaf_(upload(planned.schedule.row_leaf)),
        merge_offsets_(upload(planned.schedule.merge_offsets)),
        merge_rows_(upload(planned.schedule.merge_rows)),
        partial_o_(static_cast<std::size_t>(planned.schedule.num_rows()) * shape.head_dim),
        partial_lse_(static_cast<std::size_t>(planned.schedule.num_rows())),
        chain_count_(upload(std::vector<unsigned>{0})) {
    const Schedule& s = planned.schedule;
    if (!s.gemm_chunks.empty()) gemm_ = std::make_unique<GemmAttention>(shape, s);
    if (decisions_.wide_kernel == ItemKernel::wgmma) {
      // TMA descriptors for the segments the wide items read (one segment each in this schedule).
      for (const WorkItem& item : s.wide_items) {
        if (item.num_segments != 1) throw std::logic_error("wgmma items read one segment each");
        map_segments_.push_back(s.item_segments[item.first_segment]);
      }
      std::sort(map_segments_.begin(), map_segments_.end());
      map_segments_.erase(std::unique(map_segments_.begin(), map_segments_.end()), map_segments_.end());
    }
  }

  // What the constructor allocates on the device, array by array.
  static std::size_t device_bytes(const AttentionShape& shape, const SharingTree& tree, const Planned& planned) {
    const Schedule& s = planned.schedule;
    const std::size_t rows = static_cast<std::size_t>(s.num_rows());
    std::size_t bytes = CudaPlan::device_bytes(tree) + (s.narrow_items.size() + s.wide_items.size()) * sizeof(WorkItem) +
                        (s.wide_worker_items.size() + s.item_segments.size() + 3 * rows + s.merge_offsets.size() +
                         s.merge_rows.size()) * sizeof(int) +
                        rows * (static_cast<std::size_t>(shape.head_dim) + 1) * sizeof(float) + sizeof(unsigned);
    if (!s.gemm_chunks.empty()) bytes += GemmAttention::device_bytes(shape, s);
    if (planned.decisions.wide_kernel == ItemKernel::wgmma) {
      bytes += 2 * static_cast<std::size_t>(tree.num_segments()) * sizeof(CUtensorMap);
    }
    return bytes;
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) override {
    const Launches l = launches(in, out, bind(in, out, stream));
    switch (decisions_.recipe) {
      case LaunchRecipe::one_launch: one_launch(l); break;
      case LaunchRecipe::side_by_side: side_by_side(l); break;
      case LaunchRecipe::folded_leaves: folded_leaves(l); break;
      case LaunchRecipe::leaves_beside: leaves_beside(l); break;
      case LaunchRecipe::gemm_side_by_side: gemm_side_by_side(l, in); break;
      case LaunchRecipe::chained_leaves: chained_leaves(l); break;
      case LaunchRecipe::leaves_inside: leaves_inside(l); break;
    }
  }

  std::vector<PlanDecision> decisions() const override { return decisions_.log; }

 private:
  // One run's launch parameters, bound to its tensors.
  struct Launches {
    SegmentAttentionParams narrow, wide;
    MergeParams merge;
    cudaStream_t stream;
  };

  Launches launches(const AttentionInputs& in, const AttentionOutputs& out, cudaStream_t s) const {
    Launches l;
    l.stream = s;
    MergeParams& m = l.merge;
    m.partial_o = partial_o_.data();
    m.partial_lse = partial_lse_.data();
    m.offsets = merge_offsets_.data();
    m.rows = merge_rows_.data();
    m.o = out.o.data;
    m.lse = static_cast<float*>(out.lse.data);
    m.num_queries = shape_.num_seqs * shape_.q_len * shape_.q_heads;
    m.single_rows_direct = gemm_ == nullptr;  // the cuBLAS products write the workspace only
    SegmentAttentionParams p;
    set_inputs(p, in);
    p.item_segments = item_segments_.data();
    p.row_query = row_query_.data();
    p.row_limit = row_limit_.data();
    p.row_leaf = row_leaf_.data();
    p.leaf_capacity = leaf_capacity_.data();
    p.merge = m;
    p.kv_maps = binding().extra.data();
    p.kv_heads = shape_.kv_heads;
    p.scale_log2 = shape_.scale * kLog2e;
    l.narrow = l.wide = p;
    l.narrow.items = narrow_.data();
    l.narrow.num_items = static_cast<int>(narrow_.size());
    l.narrow.merge.fold_wide_rows = decisions_.launches.folds();
    l.narrow.merge.fold_rounds = decisions_.launches.fold_rounds;
    l.narrow.leaf_evict_first = decisions_.launches.leaf_evict_first;
    if (decisions_.recipe == LaunchRecipe::chained_leaves) l.narrow.merge.chain_count = chain_count_.data();
    l.wide.items = wide_.data();
    l.wide.num_items = static_cast<int>(wide_.size());
    l.wide.worker_items = wide_worker_items_.size() > 0 ? wide_worker_items_.data() : nullptr;
    if (decisions_.recipe == LaunchRecipe::leaves_inside) {
      l.wide.leaf_items = narrow_.data();
      l.wide.num_leaf_items = static_cast<int>(narrow_.size());
      l.wide.leaf_evict_first = decisions_.launches.leaf_evict_first;  // for its leaf warps
      if (decisions_.launches.folds()) {  // the clusters fold their own leaves' rows (rule fold_leaves)
        l.wide.cluster_leaf_items = cluster_leaf_items_.data();
        l.wide.merge.fold_wide_rows = true;
      }
    }
    return l;
  }

  void launch_narrow(const Launches& l, cudaStream_t s, bool dependent = false) const {
    launch_segment_attention(l.narrow, decisions_.launches.narrow_workers, decisions_.narrow_kernel, shape_.dtype,
                             shape_.head_dim, s, dependent, kWgmmaTileTokens[0], decisions_.launches.narrow_product);
  }
  void launch_wide(const Launches& l) const {
    launch_segment_attention(l.wide, decisions_.launches.wide_workers, decisions_.wide_kernel, shape_.dtype, shape_.head_dim,
                             l.stream, false, decisions_.launches.wide_tile_tokens, NarrowProduct::rows,
                             decisions_.build.wide_cluster);
  }
  void merge(const Launches& l) const {
    if (decisions_.launches.run_merge) {
      launch_merge(l.merge, decisions_.launches.merge_warps, decisions_.launches.overlap_merge, shape_.dtype, shape_.head_dim,
                   l.stream);
    }
  }
  // The side stream starts after the work before this run on the caller's stream, and the caller's
  // stream continues after the side's.
  cudaStream_t fork(const Launches& l) const {
    CUDA_CHECK(cudaEventRecord(fork_.get(), l.stream));
    CUDA_CHECK(cudaStreamWaitEvent(side_.get(), fork_.get()));
    return side_.get();
  }
  void join(const Launches& l) const {
    CUDA_CHECK(cudaEventRecord(join_.get(), side_.get()));
    CUDA_CHECK(cudaStreamWaitEvent(l.stream, join_.get()));
  }

  // LaunchRecipe::one_launch: whichever kind of items there is (none: the merge writes identities).
  void one_launch(const Launches& l) const {
    launch_narrow(l, l.stream);  // a launch of no items launches nothing
    launch_wide(l);
    merge(l);
  }
  // LaunchRecipe::side_by_side: the leaves (short, latency-bound) on a side stream fill the SMs the
  // wide launch leaves idle.
  void side_by_side(const Launches& l) const {
    const cudaStream_t side = fork(l);
    launch_wide(l);
    launch_narrow(l, side);
    join(l);
    merge(l);
  }
  // LaunchRecipe::folded_leaves: the leaves start as the wgmma blocks leave SMs, and do the merge.
  void folded_leaves(const Launches& l) const {
    launch_wide(l);
    launch_narrow(l, l.stream, true);
  }
  // LaunchRecipe::chained_leaves: the leaves as the wide launch's dependent launch, so that the wgmma
  // blocks are resident before any leaf block takes an SM (beside: the leaves' whole-SM blocks take the
  // SMs the persistent wgmma blocks leave); the last leaf worker to finish waits for it
  // (MergeParams::chain_count), so the merge after the leaves (their dependent where rule overlap_merge
  // says so) reads complete rows.
  void chained_leaves(const Launches& l) const {
    launch_wide(l);
    launch_narrow(l, l.stream, true);
    merge(l);
  }
  // LaunchRecipe::leaves_beside (leaf_launch=stream, or no dependent launch): the leaves launched
  // first on a side stream, so that their whole-SM blocks are resident before the persistent wgmma
  // blocks take the other SMs.
  void leaves_beside(const Launches& l) const {
    launch_narrow(l, fork(l));
    launch_wide(l);
    join(l);
    merge(l);
  }
  // LaunchRecipe::leaves_inside: one wgmma launch, its blocks' leaf warps running the narrow items.
  void leaves_inside(const Launches& l) const {
    launch_wide(l);
    merge(l);
  }
  // LaunchRecipe::gemm_side_by_side: cuBLAS's products of the shared segments, the rest beside them.
  void gemm_side_by_side(const Launches& l, const AttentionInputs& in) const {
    const cudaStream_t side = fork(l);
    gemm_->enqueue(in, l.merge, row_limit_.data(), l.wide.scale_log2, l.stream);
    launch_wide(l);
    launch_narrow(l, side);
    join(l);
    merge(l);
  }

  // The binding's TMA descriptors: [num_segments][2] K, V of map_segments_ (wgmma only).
  void rebound(const AttentionInputs& in, Binding& b, cudaStream_t s) override {
    if (map_segments_.empty()) return;
    std::vector<CUtensorMap> maps(2 * static_cast<std::size_t>(tree_.num_segments()));
    for (int segment : map_segments_) {
      const int length = tree_.length(segment);
      maps[2 * segment] = kv_tensor_map(in.k[segment].data, shape_.dtype, length, shape_.kv_heads, shape_.head_dim);
      maps[2 * segment + 1] = kv_tensor_map(in.v[segment].data, shape_.dtype, length, shape_.kv_heads, shape_.head_dim);
    }
    b.extra = DeviceArray<unsigned char>(maps.size() * sizeof(CUtensorMap));
    CUDA_CHECK(cudaMemcpyAsync(b.extra.data(), maps.data(), b.extra.bytes(), cudaMemcpyHostToDevice, s));
  }

  PlanDecisions decisions_;
  DeviceArray<WorkItem> narrow_, wide_;
  DeviceArray<int> wide_worker_items_;  // [wide workers + 1] persistent wgmma blocks' runs; empty: a block per item
  DeviceArray<int> cluster_leaf_items_;  // [clusters + 1] the leaves of each cluster (Schedule::cluster_leaf_items); or empty
  DeviceArray<int> item_segments_, row_query_, row_limit_, row_leaf_, merge_offsets_, merge_rows_;
  DeviceArray<float> partial_o_;    // [rows, D]
  DeviceArray<float> partial_lse_;  // [rows]
  DeviceArray<unsigned> chain_count_;  // [1] MergeParams::chain_count, zero between runs
  std::unique_ptr<GemmAttention> gemm_;  // cuda-hydragen-cublas's shared segments; null otherwise
  std::vector<int> map_segments_;    // segments read by wgmma items
  OwnedStream side_;                // runs the narrow items beside the wide ones
  OwnedEvent fork_{cudaEventDisableTiming}, join_{cudaEventDisableTiming};
};

}  // namespace

DeviceLimits planning_device() {
  DeviceLimits device = device_limits();
  device.rates = resolve_device_rates(device);
  return device;
}

std::unique_ptr<AttentionPlan> make_segment_plan(const AttentionShape& shape, const SharingTree& tree, const Planned& planned) {
  return std::make_unique<SegmentPlan>(shape, tree, planned);
}

std::unique_ptr<AttentionPlan> make_flash_plan(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  return std::make_unique<SegmentPlan>(shape, tree, plan_flash(shape, tree, options, planning_device()));
}
std::size_t flash_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  return SegmentPlan::device_bytes(shape, tree, plan_flash(shape, tree, options, planning_device()));
}
std::size_t segment_plan_bytes(const AttentionShape& shape, const SharingTree& tree, const Planned& planned) {
  return SegmentPlan::device_bytes(shape, tree, planned);
}

std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree,
                                                  const PlanOptions& options) {
  if (options.at("tune") == "measure") return make_measured_plan(shape, tree, options);
  return std::make_unique<SegmentPlan>(shape, tree, plan_hydragen(shape, tree, options, planning_device()));
}
std::size_t hydragen_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  if (options.at("tune") == "measure") return measured_workspace_bytes(shape, tree, options);
  return SegmentPlan::device_bytes(shape, tree, plan_hydragen(shape, tree, options, planning_device()));
}
std::unique_ptr<AttentionPlan> make_hydragen_cublas_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<SegmentPlan>(shape, tree, plan_hydragen_cublas(shape, tree, planning_device()));
}
std::size_t hydragen_cublas_workspace_bytes(const AttentionShape& shape, const SharingTree& tree) {
  return SegmentPlan::device_bytes(shape, tree, plan_hydragen_cublas(shape, tree, planning_device()));
}

}  // namespace hydragen::cuda
