// The host side of the launches: what the device has, and which kernel runs a launch of items.
#include "dispatch.cuh"
#include "launch.hpp"

namespace hydragen::cuda {

DeviceLimits device_limits() {
  int device = 0, sms = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceLimits limits;
  limits.sms = sms;
  limits.name = prop.name;
#ifdef HYDRAGEN_WGMMA
  limits.wgmma = major == 9 && minor == 0;  // sm_90a code runs on compute capability 9.0 only (H100, H200)
#endif
  limits.dependent_launch = major >= 9;
  return limits;
}

bool has_kernels(DType dtype, int head_dim) {
  try {
    dispatch(dtype, head_dim, [](auto, auto) {});
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

void launch_segment_attention(const SegmentAttentionParams& params, int workers, ItemKernel kernel, DType dtype,
                              int head_dim, cudaStream_t stream, bool dependent, int tile_tokens, NarrowProduct product,
                              int cluster) {
  if (params.num_items == 0) return;
  if (workers < 1 || workers > params.num_items) {
    throw std::logic_error("segment attention: " + std::to_string(workers) + " workers for " +
                           std::to_string(params.num_items) + " items");
  }
  if (dependent && (kernel == ItemKernel::wgmma || dtype == DType::fp32)) {
    throw std::logic_error("segment attention: only the mma.sync kernels launch as dependents");
  }
  if (cluster > 1 && kernel != ItemKernel::wgmma) {
    throw std::logic_error("segment attention: only the wgmma kernel runs in clusters");
  }
  const MergeParams& m = params.merge;
  if (m.fold_wide_rows && (m.fold_rounds > kLongFoldRounds || (m.fold_rounds > kFoldRounds && kernel != ItemKernel::token_warps))) {
    throw std::logic_error("segment attention: folds of " + std::to_string(m.fold_rounds) + " rows; " +
                           std::to_string(kFoldRounds) + " at most, " + std::to_string(kLongFoldRounds) + " in token_warps");
  }
  if (product == NarrowProduct::tokens && kernel != ItemKernel::item_warps && kernel != ItemKernel::sm_item_warps) {
    throw std::logic_error("segment attention: the token product is the warp kernels' (item_warps, sm_item_warps)");
  }
  if (dtype == DType::fp32) {
    if (kernel != ItemKernel::simt) throw std::logic_error("segment attention: fp32 has only CUDA-core (simt) blocks");
    detail::launch_simt(params, workers, dtype, head_dim, stream);
  } else if (kernel == ItemKernel::wgmma) {
    detail::launch_wgmma(params, workers, tile_tokens, cluster, dtype, head_dim, stream);
  } else {
    detail::launch_mma(params, workers, kernel, product, dtype, head_dim, stream, dependent);
  }
}

}  // namespace hydragen::cuda
