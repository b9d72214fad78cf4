#pragma once
// Host entry points of the kernels. Each dispatches on (dtype, head_dim) through one switch
// (kernels.cu) and throws std::invalid_argument for a combination that has no kernel.
#include <cuda_runtime_api.h>

#include "hydragen/dtype.hpp"
#include "params.hpp"

namespace hydragen::cuda {

// The block shapes a launch of segment-attention items can use.
enum class ItemKernel {
  narrow,  // <= 16 rows: 1 row warp x 4 token warps (mma.sync; CUDA cores for fp32), 3 blocks per SM
  wide,    // <= 64 rows: 4 row warps (mma.sync, sm_80+), 3 blocks per SM
  wgmma,   // <= 128 rows: 2 warpgroups (wgmma, sm_90a), 1 block per SM
};

// Blocks of the mma.sync kernels resident on one SM: __launch_bounds__ caps the registers for it,
// and two 64-token K/V stages (70 KB at D = 128) fit three times in 227 KB.
inline constexpr int kResidentBlocksPerSm = 3;

int max_rows(ItemKernel kernel);
int resident_blocks(ItemKernel kernel);  // blocks resident on the whole current device at once

// True when (dtype, head_dim) has kernels: fp32, fp16, bf16 x D in {64, 128}.
bool has_kernels(DType dtype, int head_dim);

// The kernel for items of more than 16 rows on the current device, or narrow when the dtype has
// none (fp32). `allow_wgmma` false keeps the mma.sync kernel (the cuda-hydragen-mma variant).
ItemKernel wide_kernel(DType dtype, bool allow_wgmma);

// The items of `params.items` on `grid` blocks: one block each (grid = num_items), or, for the mma
// kernels, fewer persistent blocks, each taking a contiguous run of items (the plan chooses the grid
// once, not per run).
void launch_segment_attention(SegmentAttentionParams params, int num_items, int grid, ItemKernel kernel, DType dtype,
                              int head_dim, cudaStream_t stream);
// True when the current device starts a kernel before the one it depends on has ended
// (programmatic dependent launch: sm_90 and later).
bool has_dependent_launch();
// `max_partials`: the most partial rows of one query (a block's warps share a query above 8).
// `overlap`: the stream's last work is the one segment-attention launch that writes the partials,
// and the merge starts while that launch ends (dependent_launch.cuh; only where
// has_dependent_launch()).
void launch_merge(const MergeParams& params, int max_partials, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream);
void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream);

}  // namespace hydragen::cuda
