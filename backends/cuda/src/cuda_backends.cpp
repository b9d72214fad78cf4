#include "hydragen/cuda/cuda_backends.hpp"

#include <string>

#include "hydragen/cuda/memory.hpp"
#include "kernels/launch.hpp"
#include "plans.hpp"

namespace hydragen {

namespace {
// The mma.sync kernels count a segment's K or V in 16-byte chunks in 32 bits (kernel-notes: copy-addresses).
constexpr long long kMaxSegmentBytes = 16LL << 31;

Support cuda_supports(const AttentionShape& shape, const SharingTree& tree) {
  if (!cuda::has_kernels(shape.dtype, shape.head_dim)) {
    return Support::no("dtype " + std::string(dtype_name(shape.dtype)) + " with head_dim " + std::to_string(shape.head_dim) +
                       " (CUDA backends have kernels for fp32, fp16, bf16 x D in {64, 128})");
  }
  const long long row_bytes = static_cast<long long>(shape.kv_heads) * shape.head_dim * dtype_size(shape.dtype);
  for (int segment = 0; segment < tree.num_segments(); ++segment) {
    const long long bytes = tree.length(segment) * row_bytes;
    if (bytes >= kMaxSegmentBytes) {
      return Support::no("segment " + std::to_string(segment) + " holds " + std::to_string(bytes) +
                         " bytes of K (CUDA backends take segments of less than 32 GiB of K or V each)");
    }
  }
  return Support::yes();
}
}  // namespace

void register_cuda_backends(BackendRegistry& registry) {
  const std::string supported = "; dtypes fp32, fp16, bf16 (fp32 accumulate); D 64, 128; any GQA ratio, q_len, tree";
  const DeviceMemory* memory = &cuda::device_memory();
  registry.add(make_backend({"cuda-naive",
                             "per query row, scores materialized in global memory, then softmax and P V: the teaching baseline" + supported,
                             memory, cuda_supports, without_options(cuda::make_naive_plan),
                             without_options(cuda::naive_workspace_bytes)}));
  registry.add(make_backend({"cuda-flash",
                             "FlashAttention-style: per (sequence, KV head) over its path, K/V tiles in shared memory, online "
                             "softmax, tensor cores (fp16/bf16), split-KV + merge when the grid is under-filled" + supported,
                             memory, cuda_supports, cuda::make_flash_plan, cuda::flash_workspace_bytes, cuda::flash_options(),
                             cuda::flash_variants()}));
  registry.add(make_backend({"cuda-hydragen",
                             "per segment, the queries of every sequence below it in one fused tensor-core attention (128-row "
                             "wgmma blocks on sm_90a, 64-row mma.sync elsewhere), leaves beside it, then one merge kernel" + supported,
                             memory, cuda_supports, cuda::make_hydragen_plan, cuda::hydragen_workspace_bytes,
                             cuda::hydragen_options(), cuda::hydragen_variants()}));
  registry.add(make_backend({"cuda-hydragen-cublas",
                             "the same decomposition with cuBLAS: per shared segment, S = Q K^T and O = P V as strided-batched "
                             "GEMMs over chunks of its tokens with a softmax kernel between; leaves on the fused kernel; the "
                             "same merge" + supported,
                             memory, cuda_supports, without_options(cuda::make_hydragen_cublas_plan),
                             without_options(cuda::hydragen_cublas_workspace_bytes)}));
}

}  // namespace hydragen
