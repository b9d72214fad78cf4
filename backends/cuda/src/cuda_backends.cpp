#include "hydragen/cuda/cuda_backends.hpp"

#include <string>

#include "hydragen/cuda/memory.hpp"
#include "kernels/launch.hpp"
#include "plans.hpp"

namespace hydragen {

namespace {
Support cuda_supports(const AttentionShape& shape, const SharingTree&) {
  if (!cuda::has_kernels(shape.dtype, shape.head_dim)) {
    return Support::no("dtype " + std::string(dtype_name(shape.dtype)) + " with head_dim " + std::to_string(shape.head_dim) +
                       " (CUDA backends have kernels for fp32, fp16, bf16 x D in {64, 128})");
  }
  return Support::yes();
}
}  // namespace

void register_cuda_backends(BackendRegistry& registry) {
  const std::string supported = "; dtypes fp32, fp16, bf16 (fp32 accumulate); D 64, 128; any GQA ratio, q_len, tree";
  const DeviceMemory* memory = &cuda::device_memory();
  registry.add(make_backend({"cuda-naive",
                             "per query row, scores materialized in global memory, then softmax and P V: the teaching baseline" + supported,
                             memory, cuda_supports, cuda::make_naive_plan}));
  registry.add(make_backend({"cuda-flash",
                             "FlashAttention-style: per (sequence, KV head) over its path, K/V tiles in shared memory, online "
                             "softmax, tensor cores (fp16/bf16), split-KV + merge when the grid is under-filled" + supported,
                             memory, cuda_supports, cuda::make_flash_plan}));
  registry.add(make_backend({"cuda-hydragen",
                             "per segment, the queries of every sequence below it in one tensor-core attention (128-row wgmma blocks on "
                             "sm_90, 64-row mma.sync elsewhere; a problem small enough for one 16-row block per SM in one launch "
                             "of those), then one merge kernel along each path" + supported,
                             memory, cuda_supports, cuda::make_hydragen_plan}));
  registry.add(make_backend({"cuda-hydragen-wide",
                             "cuda-hydragen always with wide blocks for the shared segments (wgmma on sm_90), even where one "
                             "launch of 16-row blocks is faster" + supported,
                             memory, cuda_supports, cuda::make_hydragen_wide_plan}));
  registry.add(make_backend({"cuda-hydragen-mma",
                             "cuda-hydragen-wide with the shared segments on mma.sync 64-row blocks on every GPU (the sm_80 "
                             "kernel; cuda-hydragen uses 128-row wgmma blocks on sm_90)" + supported,
                             memory, cuda_supports, cuda::make_hydragen_mma_plan}));
}

}  // namespace hydragen
