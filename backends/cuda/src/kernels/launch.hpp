#pragma once
// Host entry points of the kernels. Each dispatches on (dtype, head_dim) through one switch
// (dispatch.cuh) and throws std::invalid_argument for a combination that has no kernel.
#include <cuda_runtime_api.h>

#include "device_limits.hpp"
#include "hydragen/dtype.hpp"
#include "params.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

// The current device's limits (planner/device_limits.hpp), asked once when a plan is made.
DeviceLimits device_limits();

// True when (dtype, head_dim) has kernels (dispatch.cuh's list).
bool has_kernels(DType dtype, int head_dim);

// The params.num_items items on `workers` workers (blocks, or the warps of the warp kernels), each
// taking a contiguous run of items (worker_items.cuh): params.worker_items' runs ([workers + 1]) or an
// even share, one item each when workers = num_items. `dependent` (mma kernels only): a programmatic
// dependent launch after the wide launch whose rows it folds (MergeParams::fold_wide_rows). `tile_tokens`:
// the wgmma kernel's K/V tile (kWgmmaTileTokens; rule wide_tile), unused by the others. `product`: the
// warp kernels' product layout (rule narrow_product; tokens needs items of at most kTokenProductRows rows).
// `cluster` (wgmma only): > 1, a block per item in clusters of that many, a row block's parts (rule part_merge).
void launch_segment_attention(const SegmentAttentionParams& params, int workers, ItemKernel kernel, DType dtype,
                              int head_dim, cudaStream_t stream, bool dependent = false,
                              int tile_tokens = kWgmmaTileTokens[0], NarrowProduct product = NarrowProduct::rows,
                              int cluster = 1);
// `warps`: per query, 1 or kMergeWarps (rule merge_warps). `overlap`: the stream's last work is the one segment-attention launch that
// writes the partials, and the merge starts while that launch ends (dependent_launch.cuh; only where
// the device has dependent launch).
void launch_merge(const MergeParams& params, int warps, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream);
void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream);
// cuda-hydragen-cublas's kernels beside its GEMMs (gemm_softmax.cuh).
void launch_gather(const GatherParams& params, DType dtype, int head_dim, cudaStream_t stream);
void launch_chunk_softmax(const ChunkSoftmaxParams& params, DType dtype, cudaStream_t stream);

namespace detail {
// One per kernel family, each in its own translation unit (attention_*.cu).
void launch_mma(const SegmentAttentionParams& params, int workers, ItemKernel kernel, NarrowProduct product, DType dtype,
                int head_dim, cudaStream_t stream, bool dependent);
void launch_wgmma(const SegmentAttentionParams& params, int blocks, int tile_tokens, int cluster, DType dtype,
                  int head_dim, cudaStream_t stream);
void launch_simt(const SegmentAttentionParams& params, int blocks, DType dtype, int head_dim, cudaStream_t stream);
}  // namespace detail

}  // namespace hydragen::cuda
