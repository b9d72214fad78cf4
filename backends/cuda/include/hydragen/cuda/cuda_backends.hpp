#pragma once
// CUDA backends (DESIGN.md section 4):
//   cuda-naive     per query row, scores materialized: the simplest correct kernel
//   cuda-flash     FlashAttention-style tiles over each sequence's path, split-KV + merge
//   cuda-hydragen  per segment, the queries of every sequence below it batched on a fused
//                  tensor-core kernel, then merge; plan options form=auto|wide|narrow, wide_kernel=auto|mma64
//   cuda-hydragen-cublas  the same decomposition with cuBLAS GEMMs for the shared segments
#include "hydragen/registry.hpp"

namespace hydragen {

void register_cuda_backends(BackendRegistry& registry);

}  // namespace hydragen
