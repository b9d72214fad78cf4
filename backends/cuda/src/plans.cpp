#include "plans.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "handles.hpp"
#include "kernels/launch.hpp"
#include "schedule.hpp"
#include "tensor_maps.hpp"

namespace hydragen::cuda {

namespace {

template <typename T>
DeviceArray<T> upload(const std::vector<T>& values) {
  DeviceArray<T> array(values.size());
  device_memory().copy_from_host(array.data(), values.data(), array.bytes());
  return array;
}

// Throws std::invalid_argument when `ptr` is not memory the GPU can address (a host pointer).
void require_device_pointer(const void* ptr, const std::string& name) {
  if (ptr == nullptr) return;  // only empty segments may be null, and check_io has allowed them
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    throw std::invalid_argument(name + ": not CUDA device memory (CUDA backends read and write GPU buffers)");
  }
}

// What every CUDA plan shares: the problem, the device table of segment pointers and lengths, and
// binding a run's tensors to that table.
class CudaPlan : public AttentionPlan {
 protected:
  CudaPlan(const AttentionShape& shape, const SharingTree& tree)
      : shape_(shape),
        tree_(tree),
        k_(static_cast<std::size_t>(tree.num_segments())),
        v_(static_cast<std::size_t>(tree.num_segments())),
        segment_length_(upload(lengths(tree))) {}

  // check_io, then points the device tables at the inputs. The pointers are checked and copied only
  // when they differ from the last run's, so repeated runs (and a graph captured after a first run)
  // launch kernels only.
  cudaStream_t bind(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) {
    check_io(shape_, tree_, in, out);
    std::vector<const void*> now{in.q.data, out.o.data, out.lse.data};
    for (const auto* side : {&in.k, &in.v}) {
      for (const ConstTensor& t : *side) now.push_back(t.data);
    }
    const auto s = static_cast<cudaStream_t>(stream.handle);
    if (now == bound_) return s;
    const int n = tree_.num_segments();
    require_device_pointer(in.q.data, "inputs.q");
    require_device_pointer(out.o.data, "outputs.o");
    require_device_pointer(out.lse.data, "outputs.lse");
    for (int i = 0; i < n; ++i) {
      require_device_pointer(in.k[i].data, "inputs.k[" + std::to_string(i) + "]");
      require_device_pointer(in.v[i].data, "inputs.v[" + std::to_string(i) + "]");
    }
    // From pageable memory: the call returns once the source is staged, so `now` may go.
    CUDA_CHECK(cudaMemcpyAsync(k_.data(), now.data() + 3, k_.bytes(), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(v_.data(), now.data() + 3 + n, v_.bytes(), cudaMemcpyHostToDevice, s));
    rebound(in, s);
    bound_ = std::move(now);
    return s;
  }

  // Called by bind when the input pointers changed, after the segment tables are uploaded.
  virtual void rebound(const AttentionInputs&, cudaStream_t) {}

  AttentionShape shape_;
  SharingTree tree_;
  DeviceArray<const void*> k_;        // [num_segments] -> [length, Hkv, D]
  DeviceArray<const void*> v_;        // [num_segments] -> [length, Hkv, D]
  DeviceArray<int> segment_length_;   // [num_segments]

 private:
  static std::vector<int> lengths(const SharingTree& tree) {
    std::vector<int> l;
    for (int i = 0; i < tree.num_segments(); ++i) l.push_back(tree.length(i));
    return l;
  }
  std::vector<const void*> bound_;  // q, o, lse, k[...], v[...] as last bound
};

class SegmentPlan final : public CudaPlan {
 public:
  SegmentPlan(const AttentionShape& shape, const SharingTree& tree, const Schedule& s, ItemKernel wide_kernel)
      : CudaPlan(shape, tree),
        wide_kernel_(wide_kernel),
        narrow_(upload(s.narrow_items)),
        wide_(upload(s.wide_items)),
        item_segments_(upload(s.item_segments)),
        row_query_(upload(s.row_query)),
        row_limit_(upload(s.row_limit)),
        merge_offsets_(upload(s.merge_offsets)),
        merge_rows_(upload(s.merge_rows)),
        needs_merge_(s.needs_merge()),
        max_partials_(s.max_partials()),
        narrow_grid_(grid(s.narrow_items, ItemKernel::narrow)),
        wide_grid_(grid(s.wide_items, wide_kernel)),
        overlap_merge_(overlap_merge()),
        partial_o_(static_cast<std::size_t>(s.num_rows()) * shape.head_dim),
        partial_lse_(static_cast<std::size_t>(s.num_rows())) {
    if (wide_kernel_ == ItemKernel::wgmma) {
      // TMA descriptors for the segments the wide items read (one segment each in this schedule).
      for (const WorkItem& item : s.wide_items) {
        if (item.num_segments != 1) throw std::logic_error("wgmma items read one segment each");
        map_segments_.push_back(s.item_segments[item.first_segment]);
      }
      std::sort(map_segments_.begin(), map_segments_.end());
      map_segments_.erase(std::unique(map_segments_.begin(), map_segments_.end()), map_segments_.end());
      kv_maps_ = DeviceArray<CUtensorMap>(2 * static_cast<std::size_t>(tree.num_segments()));
    }
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) override {
    const cudaStream_t s = bind(in, out, stream);
    const MergeParams m{partial_o_.data(), partial_lse_.data(), merge_offsets_.data(), merge_rows_.data(),
                        out.o.data, static_cast<float*>(out.lse.data),
                        shape_.num_seqs * shape_.q_len * shape_.q_heads};
    SegmentAttentionParams p{in.q.data, k_.data(), v_.data(), segment_length_.data(), nullptr, 0,
                             item_segments_.data(), row_query_.data(), row_limit_.data(), m, kv_maps_.data(),
                             shape_.kv_heads, shape_.scale * 1.4426950408889634f};
    // The narrow items (leaves: short, latency-bound) run on a side stream beside the wide ones
    // (shared segments), so they fill the SMs the wide launch leaves idle. The merge, after both,
    // runs only when some query has other than one partial row (a single one is written by its
    // block; a query with none needs the merge to write its identity).
    const bool both = narrow_.size() > 0 && wide_.size() > 0;
    const cudaStream_t narrow_stream = both ? side_.get() : s;
    if (both) {
      CUDA_CHECK(cudaEventRecord(fork_.get(), s));
      CUDA_CHECK(cudaStreamWaitEvent(narrow_stream, fork_.get()));
    }
    p.items = wide_.data();
    launch_segment_attention(p, static_cast<int>(wide_.size()), wide_grid_, wide_kernel_, shape_.dtype, shape_.head_dim, s);
    p.items = narrow_.data();
    launch_segment_attention(p, static_cast<int>(narrow_.size()), narrow_grid_, ItemKernel::narrow, shape_.dtype,
                             shape_.head_dim, narrow_stream);
    if (both) {
      CUDA_CHECK(cudaEventRecord(join_.get(), narrow_stream));
      CUDA_CHECK(cudaStreamWaitEvent(s, join_.get()));
    }
    if (needs_merge_) launch_merge(m, max_partials_, overlap_merge_, shape_.dtype, shape_.head_dim, s);
  }

 private:
  void rebound(const AttentionInputs& in, cudaStream_t s) override {
    if (map_segments_.empty()) return;
    std::vector<CUtensorMap> maps(kv_maps_.size());
    for (int segment : map_segments_) {
      const int length = tree_.length(segment);
      maps[2 * segment] = kv_tensor_map(in.k[segment].data, shape_.dtype, length, shape_.kv_heads, shape_.head_dim);
      maps[2 * segment + 1] = kv_tensor_map(in.v[segment].data, shape_.dtype, length, shape_.kv_heads, shape_.head_dim);
    }
    CUDA_CHECK(cudaMemcpyAsync(kv_maps_.data(), maps.data(), kv_maps_.bytes(), cudaMemcpyHostToDevice, s));
  }

  // Whether the merge starts while the one attention launch before it ends (dependent_launch.cuh;
  // decided once here, on a device that has it):
  // only after a single launch (after the join of two streams it waits in stream order) that
  // leaves half the GPU idle. There it saves about a microsecond: (32, 1024, 0) 0.0148 -> 0.0135
  // ms; after a launch that fills the GPU it cost up to 4 us, wherever the attention kernel allowed
  // it: (256, 2048, 0) 0.019 -> 0.023 ms (H100).
  bool overlap_merge() const {
    const bool wide = wide_.size() > 0;
    if ((wide && narrow_.size() > 0) || !has_dependent_launch()) return false;
    const int blocks = wide ? wide_grid_ : narrow_grid_;
    return blocks > 0 && 2 * blocks <= resident_blocks(wide ? wide_kernel_ : ItemKernel::narrow);
  }

  // The grid of a launch of `items`: as many persistent mma blocks as are resident at once for many
  // short items (schedule.hpp's persistent_blocks), a block per item otherwise and always for wgmma.
  static int grid(const std::vector<WorkItem>& items, ItemKernel kernel) {
    const int n = static_cast<int>(items.size()), slots = resident_blocks(kernel);
    return kernel != ItemKernel::wgmma && persistent_blocks(items, slots) ? std::min(n, slots) : n;
  }

  ItemKernel wide_kernel_;  // runs the wide items
  DeviceArray<WorkItem> narrow_, wide_;
  DeviceArray<int> item_segments_, row_query_, row_limit_, merge_offsets_, merge_rows_;
  bool needs_merge_;                // some query has no partial row or several
  int max_partials_;                // the most partial rows of one query
  int narrow_grid_, wide_grid_;     // blocks of each launch: the items' count, or fewer persistent ones
  bool overlap_merge_;              // overlap_merge(), once per plan
  DeviceArray<float> partial_o_;    // [rows, D]
  DeviceArray<float> partial_lse_;  // [rows]
  std::vector<int> map_segments_;    // segments read by wgmma items
  DeviceArray<CUtensorMap> kv_maps_;  // [num_segments][2]: K, V descriptors of map_segments_ (wgmma only)
  OwnedStream side_;                // runs the narrow items beside the wide ones
  OwnedEvent fork_{cudaEventDisableTiming}, join_{cudaEventDisableTiming};
};

class NaivePlan final : public CudaPlan {
 public:
  NaivePlan(const AttentionShape& shape, const SharingTree& tree)
      : CudaPlan(shape, tree),
        path_offsets_(upload(path_offsets(tree))),
        path_segments_(upload(path_segments(tree))),
        max_path_(max_path(tree)),
        scores_(static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * static_cast<std::size_t>(max_path_)) {}

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) override {
    const cudaStream_t s = bind(in, out, stream);
    const NaiveParams p{in.q.data, k_.data(), v_.data(), segment_length_.data(), path_offsets_.data(),
                        path_segments_.data(), scores_.data(), out.o.data, static_cast<float*>(out.lse.data),
                        shape_.q_len, shape_.q_heads, shape_.kv_heads, max_path_, shape_.scale};
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

ScheduleOptions schedule_options(ItemKernel wide) {
  // Narrow blocks: at least a wave of the resident ones, and no short last wave (schedule.cpp,
  // narrow_parts). The wgmma blocks (one per SM, 128 rows, 128-token tiles) get one wave: each
  // split adds a partial per row to the merge and a pipeline fill. The wide mma.sync blocks
  // (latency-bound 64-row tiles) get three.
  const int narrow_slots = resident_blocks(ItemKernel::narrow);
  return ScheduleOptions{narrow_slots, max_rows(wide), (wide == ItemKernel::wgmma ? 1 : 3) * resident_blocks(wide),
                         narrow_slots / kResidentBlocksPerSm};
}

using MakeSchedule = Schedule (*)(const AttentionShape&, const SharingTree&, const ScheduleOptions&);

// The wgmma kernel reads one segment per item (TMA descriptors per segment): segment schedules only,
// not the flat schedule's paths.
std::unique_ptr<AttentionPlan> segment_plan(const AttentionShape& shape, const SharingTree& tree, MakeSchedule make,
                                            bool allow_wgmma) {
  const ItemKernel wide = wide_kernel(shape.dtype, allow_wgmma);
  return std::make_unique<SegmentPlan>(shape, tree, make(shape, tree, schedule_options(wide)), wide);
}

}  // namespace

std::unique_ptr<AttentionPlan> make_naive_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<NaivePlan>(shape, tree);
}

std::unique_ptr<AttentionPlan> make_flash_plan(const AttentionShape& shape, const SharingTree& tree) {
  return segment_plan(shape, tree, flat_schedule, false);
}

std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree) {
  return segment_plan(shape, tree, hydragen_schedule, true);
}

std::unique_ptr<AttentionPlan> make_hydragen_wide_plan(const AttentionShape& shape, const SharingTree& tree) {
  return segment_plan(shape, tree, segment_schedule, true);
}

std::unique_ptr<AttentionPlan> make_hydragen_mma_plan(const AttentionShape& shape, const SharingTree& tree) {
  return segment_plan(shape, tree, segment_schedule, false);
}

}  // namespace hydragen::cuda
