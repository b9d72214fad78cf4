#pragma once
// Host entry points of the kernels. Each dispatches on (dtype, head_dim) through one switch
// (dispatch.cuh) and throws std::invalid_argument for a combination that has no kernel.
#include <cuda_runtime_api.h>

#include "hydragen/dtype.hpp"
#include "params.hpp"

namespace hydragen::cuda {

// Blocks of the segment-attention kernels resident on one SM: __launch_bounds__ caps the registers
// for it, and two 64-token K/V stages (70 KB at D = 128) fit three times in 227 KB.
inline constexpr int kResidentBlocksPerSm = 3;

// True when (dtype, head_dim) has kernels: fp32, fp16, bf16 x D in {64, 128}.
bool has_kernels(DType dtype, int head_dim);

// Largest row block the segment-attention kernels take for this dtype (fp32 has no wide blocks).
int max_item_rows(DType dtype);

// One block per item; `wide` selects the four-warp, 64-row blocks.
void launch_segment_attention(const SegmentAttentionParams& params, int num_items, bool wide, DType dtype,
                              int head_dim, cudaStream_t stream);
void launch_merge(const MergeParams& params, DType dtype, int head_dim, cudaStream_t stream);
void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream);

}  // namespace hydragen::cuda
