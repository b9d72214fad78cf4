// The plan of every schedule-driven backend (cuda-flash, cuda-hydragen, cuda-hydragen-cublas): the
// schedule uploaded once, the wide items on the caller's stream beside the narrow ones on a side
// stream, then the merge; or, where the narrow items' rows can do the merge, the narrow launch after
// the wide one as its dependent, and no merge kernel; or (cuda-hydragen's leaves=beside) the narrow
// items first, on the SMs a wgmma launch of fewer blocks leaves, then the merge.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_plan.hpp"
#include "gemm_attention.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/handles.hpp"
#include "kernels/launch.hpp"
#include "leaf_placement.hpp"
#include "plan_facts.hpp"
#include "plans.hpp"
#include "schedule.hpp"
#include "tensor_maps.hpp"

namespace hydragen::cuda {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
// cuda-hydragen-cublas: the most scores (KV heads x rows x tokens) one GEMM chunk holds: 256 MiB
// of fp32 scores and their probabilities beside them.
constexpr long long kMaxChunkScores = 1LL << 26;

// How a schedule's launches run: the plan's decisions beyond the schedule and its kernels.
struct LaunchChoices {
  int narrow_workers = 0, wide_workers = 0;  // of each launch: one per item, or fewer persistent ones
  bool fold = false;                         // the narrow launch does the merge (MergeParams::fold_wide_rows)
  bool run_merge = false;                    // some query needs the merge kernel
  bool overlap_merge = false;                // the merge starts as the one attention launch before it ends
};

// The workers of a launch of `items` (blocks, or the warp kernel's warps): as many persistent ones
// as are resident at once for many short items (schedule.hpp's persistent_blocks), one per item
// otherwise and always for fp32 and for wgmma (unless the schedule gives its blocks runs of items);
// leaves on SMs of their own, a warp for each of those SMs' warps, persistent.
int launch_workers(const AttentionShape& shape, const std::vector<WorkItem>& items, ItemKernel kernel, int leaf_sms,
                   const DeviceLimits& device) {
  const int n = static_cast<int>(items.size());
  if (kernel == ItemKernel::sm_warps) return std::min(n, leaf_sms * kSmWarps);
  const int slots = resident_blocks(kernel, device) * items_per_block(kernel);
  const bool mma = kernel != ItemKernel::wgmma && shape.dtype != DType::fp32;
  return mma && persistent_blocks(items, slots) ? std::min(n, slots) : n;
}

LaunchChoices launch_choices(const AttentionShape& shape, const Schedule& s, ItemKernel wide_kernel, ItemKernel narrow_kernel,
                             int leaf_sms, const DeviceLimits& device) {
  LaunchChoices c;
  const bool gemm = !s.gemm_chunks.empty();
  c.narrow_workers = launch_workers(shape, s.narrow_items, narrow_kernel, leaf_sms, device);
  c.wide_workers = s.wide_worker_items.empty() ? launch_workers(shape, s.wide_items, wide_kernel, leaf_sms, device)
                                               : static_cast<int>(s.wide_worker_items.size()) - 1;
  // folding_leaves_pay (schedule.hpp) for this plan's launches.
  const bool folding_pays = folding_leaves_pay(static_cast<long long>(s.wide_items.size()),
                                               list_schedule(s.wide_items, device.sms).idle_sm_tokens,
                                               launch_blocks(c.narrow_workers, narrow_kernel),
                                               blocks_per_sm(narrow_kernel), device.sms);
  c.fold = wide_kernel == ItemKernel::wgmma && !gemm && device.dependent_launch && leaf_sms == 0 &&
           s.narrow_rows_fold(kFoldRounds) && folding_pays;
  c.run_merge = (s.needs_merge() || gemm) && !c.fold;
  // Whether the merge starts while the one attention launch before it ends (dependent_launch.cuh):
  // only after a single launch (after the join of two streams, or cuBLAS, it waits in stream order)
  // that leaves half the GPU idle; after a launch that fills the GPU it cost time (perf-notes v8).
  const bool wide = !s.wide_items.empty();
  if (!((wide && !s.narrow_items.empty()) || gemm || !device.dependent_launch)) {
    const ItemKernel kernel = wide ? wide_kernel : narrow_kernel;
    const int blocks = launch_blocks(wide ? c.wide_workers : c.narrow_workers, kernel);
    c.overlap_merge = blocks > 0 && 2 * blocks <= resident_blocks(kernel, device);
  }
  return c;
}

class SegmentPlan final : public CudaPlan {
 public:
  // leaf_sms > 0: the narrow items run on that many whole SMs beside the wide launch (the schedule
  // sized the wide launch for the others; narrow_kernel is ItemKernel::sm_warps).
  SegmentPlan(const AttentionShape& shape, const SharingTree& tree, const Schedule& s, ItemKernel wide_kernel,
              ItemKernel narrow_kernel, int leaf_sms, const DeviceLimits& device)
      : CudaPlan(shape, tree),
        wide_kernel_(wide_kernel),
        narrow_kernel_(narrow_kernel),
        leaf_sms_(leaf_sms),
        launches_(launch_choices(shape, s, wide_kernel, narrow_kernel, leaf_sms, device)),
        narrow_(upload(s.narrow_items)),
        wide_(upload(s.wide_items)),
        wide_worker_items_(upload(s.wide_worker_items)),
        item_segments_(upload(s.item_segments)),
        row_query_(upload(s.row_query)),
        row_limit_(upload(s.row_limit)),
        row_leaf_(upload(s.row_leaf)),
        merge_offsets_(upload(s.merge_offsets)),
        merge_rows_(upload(s.merge_rows)),
        max_partials_(s.max_partials()),
        partial_o_(static_cast<std::size_t>(s.num_rows()) * shape.head_dim),
        partial_lse_(static_cast<std::size_t>(s.num_rows())) {
    if (!s.gemm_chunks.empty()) gemm_ = std::make_unique<GemmAttention>(shape, s);
    if (!s.wide_worker_items.empty() && wide_kernel_ != ItemKernel::wgmma) {
      throw std::logic_error("segment plan: only wgmma blocks run a schedule's runs of wide items");
    }
    if ((leaf_sms_ > 0) != (narrow_kernel_ == ItemKernel::sm_warps)) {
      throw std::logic_error("segment plan: whole-SM leaf blocks run exactly when leaves are given SMs of their own");
    }
    if (wide_kernel_ == ItemKernel::wgmma) {
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
  static std::size_t device_bytes(const AttentionShape& shape, const SharingTree& tree, const Schedule& s,
                                  ItemKernel wide_kernel) {
    const std::size_t rows = static_cast<std::size_t>(s.num_rows());
    std::size_t bytes = CudaPlan::device_bytes(tree) + (s.narrow_items.size() + s.wide_items.size()) * sizeof(WorkItem) +
                        (s.wide_worker_items.size() + s.item_segments.size() + 3 * rows + s.merge_offsets.size() +
                         s.merge_rows.size()) * sizeof(int) +
                        rows * (static_cast<std::size_t>(shape.head_dim) + 1) * sizeof(float);
    if (!s.gemm_chunks.empty()) bytes += GemmAttention::device_bytes(shape, s);
    if (wide_kernel == ItemKernel::wgmma) bytes += 2 * static_cast<std::size_t>(tree.num_segments()) * sizeof(CUtensorMap);
    return bytes;
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) override {
    const cudaStream_t s = bind(in, out, stream);
    MergeParams m;
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
    // The narrow items (leaves: short, latency-bound) run on a side stream beside the shared
    // segments' work, so they fill the SMs it leaves idle. The merge, after both, runs only when
    // some query has other than one partial row written by its block. Folding leaves run on the
    // caller's stream as the wide launch's dependents instead: they start as its blocks leave SMs.
    // Leaves on SMs of their own are launched first, so that their blocks are resident before the
    // wide launch's take the other SMs.
    const bool both = narrow_.size() > 0 && (wide_.size() > 0 || gemm_ != nullptr) && !launches_.fold;
    const cudaStream_t narrow_stream = both ? side_.get() : s;
    if (both) {
      CUDA_CHECK(cudaEventRecord(fork_.get(), s));
      CUDA_CHECK(cudaStreamWaitEvent(narrow_stream, fork_.get()));
    }
    auto launch_narrow = [&] {
      SegmentAttentionParams n = p;
      n.items = narrow_.data();
      n.num_items = static_cast<int>(narrow_.size());
      n.worker_items = nullptr;
      n.merge.fold_wide_rows = launches_.fold;
      launch_segment_attention(n, launches_.narrow_workers, narrow_kernel_, shape_.dtype, shape_.head_dim, narrow_stream, launches_.fold);
    };
    if (leaf_sms_ > 0) launch_narrow();
    if (gemm_ != nullptr) gemm_->enqueue(in, m, row_limit_.data(), p.scale_log2, s);
    p.items = wide_.data();
    p.num_items = static_cast<int>(wide_.size());
    p.worker_items = wide_worker_items_.size() > 0 ? wide_worker_items_.data() : nullptr;
    launch_segment_attention(p, launches_.wide_workers, wide_kernel_, shape_.dtype, shape_.head_dim, s);
    if (leaf_sms_ == 0) launch_narrow();
    if (both) {
      CUDA_CHECK(cudaEventRecord(join_.get(), narrow_stream));
      CUDA_CHECK(cudaStreamWaitEvent(s, join_.get()));
    }
    if (launches_.run_merge) launch_merge(m, max_partials_, launches_.overlap_merge, shape_.dtype, shape_.head_dim, s);
  }

 private:
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

  ItemKernel wide_kernel_, narrow_kernel_;  // run the wide and the narrow items
  int leaf_sms_;            // SMs the narrow items have to themselves beside the wide launch; 0: none
  LaunchChoices launches_;
  DeviceArray<WorkItem> narrow_, wide_;
  DeviceArray<int> wide_worker_items_;  // [wide workers + 1] persistent wgmma blocks' runs; empty: a block per item
  DeviceArray<int> item_segments_, row_query_, row_limit_, row_leaf_, merge_offsets_, merge_rows_;
  int max_partials_;                // the most partial rows of one query
  DeviceArray<float> partial_o_;    // [rows, D]
  DeviceArray<float> partial_lse_;  // [rows]
  std::unique_ptr<GemmAttention> gemm_;  // cuda-hydragen-cublas's shared segments; null otherwise
  std::vector<int> map_segments_;    // segments read by wgmma items
  OwnedStream side_;                // runs the narrow items beside the wide ones
  OwnedEvent fork_{cudaEventDisableTiming}, join_{cudaEventDisableTiming};
};

// The schedule a plan runs and the kernels of its wide and narrow items: one rule for the plan and
// for the count of its bytes.
struct Choice {
  Schedule schedule;
  ItemKernel wide;
  DeviceLimits device;
  std::string narrow = "auto";  // the narrow items' kernel: auto (narrow_item_kernel), blocks or warps
  int leaf_sms = 0;               // > 0: the narrow items on that many SMs the wgmma launch leaves (leaves=beside)

  ItemKernel narrow_kernel(DType dtype) const {
    if (dtype == DType::fp32) return ItemKernel::narrow;  // fp32 has only CUDA-core blocks
    if (leaf_sms > 0) return ItemKernel::sm_warps;
    if (narrow == "auto") {
      const bool alone = schedule.wide_items.empty() && schedule.gemm_chunks.empty();
      return narrow_item_kernel(schedule.narrow_items, alone, ScheduleOptions::for_device(device.sms, wide));
    }
    return narrow == "warps" ? ItemKernel::warps : ItemKernel::narrow;
  }
};

std::unique_ptr<AttentionPlan> plan_of(const AttentionShape& shape, const SharingTree& tree, const Choice& c) {
  return std::make_unique<SegmentPlan>(shape, tree, c.schedule, c.wide, c.narrow_kernel(shape.dtype), c.leaf_sms, c.device);
}

std::size_t bytes_of(const AttentionShape& shape, const SharingTree& tree, const Choice& c) {
  return SegmentPlan::device_bytes(shape, tree, c.schedule, c.wide);
}

Choice flash_choice(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                   const DeviceLimits& device) {
  // The wgmma kernel reads one segment per item (TMA descriptors per segment), not the flat
  // schedule's paths: cuda-flash's wide items run on mma.sync.
  const ItemKernel wide = wide_kernel(shape.dtype, true, device);
  return {flat_schedule(shape, tree, ScheduleOptions::for_device(device.sms, wide)), wide, device, options.at("narrow")};
}

Choice hydragen_choice(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                       const DeviceLimits& device) {
  const ItemKernel wide = wide_kernel(shape.dtype, options.at("kernel") == "mma", device);
  ScheduleOptions o = ScheduleOptions::for_device(device.sms, wide);
  const std::string& form = options.at("form");
  if (form == "narrow") o.max_rows = kNarrowRows;
  o.inline_narrow_segments = options.at("inline") == "auto";
  Choice c{form == "auto" ? hydragen_schedule(shape, tree, o) : segment_schedule(shape, tree, o), wide, device,
           options.at("narrow")};
  // Leaves beside the wgmma launch (leaf_placement.hpp), where the schedule has both and `leaves`
  // does not keep them after; with narrow=blocks or warps they stay after unless asked.
  const std::string& leaves = options.at("leaves");
  if (leaves == "after" || wide != ItemKernel::wgmma || c.schedule.wide_items.empty() || c.schedule.narrow_items.empty()) {
    return c;
  }
  if (c.narrow != "auto") {
    if (leaves == "auto") return c;
    throw std::invalid_argument("cuda-hydragen: leaves=beside runs the leaves a warp each on SMs of their own; narrow=" +
                                c.narrow + " asks for another kernel");
  }
  LeafPlacement placement = place_leaves(shape, tree, o, c.schedule, leaves == "beside");
  if (!placement.beside) return c;
  c.schedule = std::move(placement.schedule);
  c.leaf_sms = placement.leaf_sms;
  return c;
}

Choice cublas_choice(const AttentionShape& shape, const SharingTree& tree, const DeviceLimits& device) {
  const ItemKernel wide = wide_kernel(shape.dtype, false, device);
  return {gemm_schedule(shape, tree, ScheduleOptions::for_device(device.sms, wide), kMaxChunkScores), wide, device};
}

PlanOption narrow_option() {
  return {"narrow",
          {"auto", "blocks", "warps"},
          "the 16-row blocks' kernel (16-bit storage): blocks: four warps share each item's tiles; warps: a warp per item, "
          "four items to a block; auto: narrow_item_kernel's rule (schedule.hpp)"};
}

}  // namespace

std::unique_ptr<AttentionPlan> make_flash_plan(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  return plan_of(shape, tree, flash_choice(shape, tree, options, device_limits()));
}
std::size_t flash_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  return bytes_of(shape, tree, flash_choice(shape, tree, options, device_limits()));
}

std::vector<PlanOption> flash_options() { return {narrow_option()}; }

std::vector<PlanOptions> flash_variants() { return {PlanOptions{}, PlanOptions::parse("narrow=warps")}; }

std::vector<PlanOption> hydragen_options() {
  return {{"form",
           {"auto", "wide", "narrow"},
           "auto: one launch of 16-row blocks where that puts at most one block on each SM, else wide; wide: the "
           "shared segments in wide blocks beside 16-row leaf blocks; narrow: every segment in 16-row blocks"},
          {"kernel", {"auto", "mma"}, "the wide blocks' kernel: auto is wgmma on sm_90a and mma.sync elsewhere; mma is mma.sync everywhere"},
          narrow_option(),
          {"inline",
           {"auto", "never"},
           "auto: a segment whose readers' queries fit one 16-row block is read within each reader's own item, its path "
           "from there to the leaf, where the batch has enough such paths to keep a quarter of the SMs busy (schedule.hpp's "
           "inline_narrow_segments); never: every segment in items of its own"},
          {"leaves",
           {"auto", "after", "beside"},
           "where a wgmma launch and leaves both run: after, the leaves on the SMs the wgmma launch frees; beside, the "
           "shared segments' parts on fewer persistent wgmma blocks and the leaves, a warp each, on the other SMs from "
           "the start; auto: beside where leaf_placement.hpp's cost model predicts it faster"}};
}

std::vector<PlanOptions> hydragen_variants() {
  return {PlanOptions{}, PlanOptions::parse("form=wide"), PlanOptions::parse("form=narrow"),
          PlanOptions::parse("form=narrow:narrow=warps"), PlanOptions::parse("form=wide:kernel=mma"),
          PlanOptions::parse("form=wide:leaves=beside"), PlanOptions::parse("inline=never")};
}

std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree,
                                                  const PlanOptions& options) {
  return plan_of(shape, tree, hydragen_choice(shape, tree, options, device_limits()));
}
std::size_t hydragen_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options) {
  return bytes_of(shape, tree, hydragen_choice(shape, tree, options, device_limits()));
}

std::unique_ptr<AttentionPlan> make_hydragen_cublas_plan(const AttentionShape& shape, const SharingTree& tree) {
  return plan_of(shape, tree, cublas_choice(shape, tree, device_limits()));
}
std::size_t hydragen_cublas_workspace_bytes(const AttentionShape& shape, const SharingTree& tree) {
  return bytes_of(shape, tree, cublas_choice(shape, tree, device_limits()));
}

PlanFacts plan_facts(const std::string& backend, const AttentionShape& shape, const SharingTree& tree,
                     const PlanOptions& options, const DeviceLimits& device) {
  const Choice c = backend == "cuda-flash"      ? flash_choice(shape, tree, options, device)
                   : backend == "cuda-hydragen" ? hydragen_choice(shape, tree, options, device)
                                                : cublas_choice(shape, tree, device);
  PlanFacts f;
  f.schedule = c.schedule;
  f.wide = c.wide;
  f.narrow = c.narrow_kernel(shape.dtype);
  f.leaf_sms = c.leaf_sms;
  const LaunchChoices l = launch_choices(shape, c.schedule, f.wide, f.narrow, f.leaf_sms, device);
  f.narrow_workers = l.narrow_workers;
  f.wide_workers = l.wide_workers;
  f.fold = l.fold;
  f.run_merge = l.run_merge;
  f.overlap_merge = l.overlap_merge;
  return f;
}

}  // namespace hydragen::cuda
