#include "tensor_maps.hpp"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "hydragen/cuda/check.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr) {
      throw std::runtime_error("CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

}  // namespace

CUtensorMap kv_tensor_map(const void* data, DType dtype, int length, int kv_heads, int head_dim) {
  if (dtype != DType::fp16 && dtype != DType::bf16) {
    throw std::invalid_argument("kv_tensor_map: dtype " + std::string(dtype_name(dtype)) + " (fp16 or bf16 only)");
  }
  if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0) {
    throw std::invalid_argument("kv_tensor_map: K/V data must be 16-byte aligned for TMA");
  }
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(kv_heads),
                              static_cast<cuuint64_t>(length)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(head_dim) * 2, static_cast<cuuint64_t>(kv_heads) * head_dim * 2};
  const cuuint32_t box[3] = {64, 1, kWgmmaBoxTokens};  // a tile is KT / 64 such boxes per 64 columns
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = encode_tiled()(&map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                    3, const_cast<void*>(data), dims, strides, box, element_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::invalid_argument("kv_tensor_map: cuTensorMapEncodeTiled failed (error " + std::to_string(static_cast<int>(r)) +
                                ") for [" + std::to_string(length) + ", " + std::to_string(kv_heads) + ", " +
                                std::to_string(head_dim) + "]");
  }
  return map;
}

}  // namespace hydragen::cuda
