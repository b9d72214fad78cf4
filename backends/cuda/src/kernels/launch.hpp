#pragma once
// Host entry points of the kernels. Each dispatches on (dtype, head_dim) through one switch
// (dispatch.cuh) and throws std::invalid_argument for a combination that has no kernel.
#include <cuda_runtime_api.h>

#include "hydragen/dtype.hpp"
#include "params.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

// What the launches and the schedules need of the device a plan is made for, asked once when the
// plan is made (as CUTLASS's KernelHardwareInfo): no number here is an H100's.
struct DeviceLimits {
  int sms = 0;                    // streaming multiprocessors
  bool wgmma = false;             // the sm_90a kernel runs: compute capability 9.0 and a build with sm_90a code
  bool dependent_launch = false;  // programmatic dependent launch (sm_90 and later)
};
DeviceLimits device_limits();  // of the current device

inline int resident_blocks(ItemKernel kernel, const DeviceLimits& device) { return blocks_per_sm(kernel) * device.sms; }

// True when (dtype, head_dim) has kernels (dispatch.cuh's list).
bool has_kernels(DType dtype, int head_dim);

// The kernel for items of more than 16 rows: wgmma where the device runs it and `mma_only` is not
// asked for, else the mma.sync wide kernel; narrow for fp32, which has only CUDA-core blocks.
ItemKernel wide_kernel(DType dtype, bool mma_only, const DeviceLimits& device);

// The params.num_items items on `workers` workers (blocks, or the warps of the warp kernels): one item
// each (workers = num_items), or fewer persistent workers, each taking a contiguous run of items: an
// even share of them for the mma kernels, params.worker_items' runs for wgmma. `dependent` (mma kernels only): a programmatic dependent launch after the
// wide launch whose rows it folds (MergeParams::fold_wide_rows).
void launch_segment_attention(const SegmentAttentionParams& params, int workers, ItemKernel kernel, DType dtype,
                              int head_dim, cudaStream_t stream, bool dependent = false);
// `max_partials`: the most partial rows of one query (a query of more than kMergeSplitAbove gets
// kMergeWarps warps). `overlap`: the stream's last work is the one segment-attention launch that
// writes the partials, and the merge starts while that launch ends (dependent_launch.cuh; only where
// the device has dependent launch).
void launch_merge(const MergeParams& params, int max_partials, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream);
void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream);
// cuda-hydragen-cublas's kernels beside its GEMMs (gemm_softmax.cuh).
void launch_gather(const GatherParams& params, DType dtype, int head_dim, cudaStream_t stream);
void launch_chunk_softmax(const ChunkSoftmaxParams& params, DType dtype, cudaStream_t stream);

namespace detail {
// One per kernel family, each in its own translation unit (attention_*.cu).
void launch_mma(const SegmentAttentionParams& params, int workers, ItemKernel kernel, DType dtype, int head_dim,
                cudaStream_t stream, bool dependent);
void launch_wgmma(const SegmentAttentionParams& params, int blocks, DType dtype, int head_dim, cudaStream_t stream);
void launch_simt(const SegmentAttentionParams& params, DType dtype, int head_dim, cudaStream_t stream);
}  // namespace detail

}  // namespace hydragen::cuda
