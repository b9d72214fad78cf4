// Instantiates every kernel for the supported (dtype, head_dim) pairs and launches them.
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../schedule.hpp"
#include "hydragen/cuda/check.hpp"
#include "launch.hpp"
#include "merge.cuh"
#include "naive.cuh"
#include "segment_attention_mma.cuh"
#include "segment_attention_simt.cuh"
#include "segment_attention_wgmma.cuh"

namespace hydragen::cuda {

namespace {

// The one list of what has kernels: calls f(T{}, std::integral_constant<int, D>{}).
template <typename F>
void dispatch(DType dtype, int head_dim, F&& f) {
  auto by_dim = [&](auto element) {
    switch (head_dim) {
      case 64: return f(element, std::integral_constant<int, 64>{});
      case 128: return f(element, std::integral_constant<int, 128>{});
      default: break;
    }
    throw std::invalid_argument("CUDA kernels: head_dim " + std::to_string(head_dim) + " has no kernel (64, 128)");
  };
  switch (dtype) {
    case DType::fp32: return by_dim(float{});
    case DType::fp16: return by_dim(__half{});
    case DType::bf16: return by_dim(__nv_bfloat16{});
    default: break;
  }
  throw std::invalid_argument("CUDA kernels: dtype " + std::string(dtype_name(dtype)) + " has no kernel (fp32, fp16, bf16)");
}

// An attribute of the current device. The launch paths run on every plan run, so they ask for the
// one value they need: query_device reads every property (cudaGetDeviceProperties), far slower.
int device_attribute(cudaDeviceAttr attribute) {
  int device = 0, value = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

// Raises a kernel's dynamic shared-memory limit (above 48 KB needs the opt-in), once per kernel.
template <void (*Kernel)(SegmentAttentionParams)>
void allow_smem(int bytes) {
  static const bool done = [bytes] {
    CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)done;
}

}  // namespace

bool has_kernels(DType dtype, int head_dim) {
  return (dtype == DType::fp32 || dtype == DType::fp16 || dtype == DType::bf16) && (head_dim == 64 || head_dim == 128);
}

int max_rows(ItemKernel kernel) {
  switch (kernel) {
    case ItemKernel::narrow: return kNarrowRows;
    case ItemKernel::wide: return kWideRows;
    case ItemKernel::wgmma: return kWgmmaRows;
  }
  throw std::logic_error("max_rows: unknown ItemKernel");
}

int resident_blocks(ItemKernel kernel) {
  return (kernel == ItemKernel::wgmma ? 1 : kResidentBlocksPerSm) * device_attribute(cudaDevAttrMultiProcessorCount);
}

ItemKernel wide_kernel(DType dtype, bool allow_wgmma) {
  if (dtype == DType::fp32) return ItemKernel::narrow;
#ifdef HYDRAGEN_WGMMA
  // The sm_90a kernels run on compute capability 9.0 only (H100, H200).
  if (allow_wgmma && device_attribute(cudaDevAttrComputeCapabilityMajor) == 9 &&
      device_attribute(cudaDevAttrComputeCapabilityMinor) == 0) {
    return ItemKernel::wgmma;
  }
#else
  (void)allow_wgmma;
#endif
  return ItemKernel::wide;
}

void launch_segment_attention(SegmentAttentionParams params, int num_items, int grid, ItemKernel kernel, DType dtype,
                              int head_dim, cudaStream_t stream) {
  if (num_items == 0) return;
  if (grid < 1 || grid > num_items || (grid != num_items && kernel == ItemKernel::wgmma)) {
    throw std::logic_error("segment attention: a grid of " + std::to_string(grid) + " blocks for " +
                           std::to_string(num_items) + " items");
  }
  params.num_items = num_items;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    if constexpr (std::is_same_v<T, float>) {
      if (kernel != ItemKernel::narrow || grid != num_items) {
        throw std::logic_error("segment attention: fp32 has only narrow blocks, one per item");
      }
      segment_attention_simt<T, D><<<num_items, 128, 0, stream>>>(params);
      check_launch("segment_attention_simt");
    } else {
      if (kernel == ItemKernel::wgmma) {
        constexpr int smem = WgmmaTile<D>::kSmemBytes;
        allow_smem<segment_attention_wgmma<T, D>>(smem);
        segment_attention_wgmma<T, D><<<num_items, WgmmaTile<D>::kThreads, smem, stream>>>(params);
        check_launch("segment_attention_wgmma");
        return;
      }
      constexpr int smem = MmaTile<D>::template smem_bytes<T>();
      // Wide: 4 row warps (64 rows); narrow: 4 token warps over 16 rows. 128 threads either way.
      if (kernel == ItemKernel::wide) {
        allow_smem<segment_attention_mma<T, D, 4, 1>>(smem);
        segment_attention_mma<T, D, 4, 1><<<grid, 128, smem, stream>>>(params);
      } else {
        allow_smem<segment_attention_mma<T, D, 1, 4>>(smem);
        segment_attention_mma<T, D, 1, 4><<<grid, 128, smem, stream>>>(params);
      }
      check_launch("segment_attention_mma");
    }
  });
}

bool has_dependent_launch() { return device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9; }

void launch_merge(const MergeParams& params, int max_partials, bool overlap, DType dtype, int head_dim,
                  cudaStream_t stream) {
  if (params.num_queries == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    using T = decltype(element);
    constexpr int D = decltype(dim)::value;
    const bool split = max_partials > kMergeSplitAbove;
    cudaLaunchAttribute dependent{};
    dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    dependent.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(split ? params.num_queries : (params.num_queries + kMergeWarps - 1) / kMergeWarps);
    config.blockDim = dim3(kMergeWarps * 32);
    config.stream = stream;
    config.attrs = &dependent;
    config.numAttrs = overlap ? 1 : 0;
    CUDA_CHECK(split ? cudaLaunchKernelEx(&config, merge_partials<T, D, kMergeWarps>, params)
                     : cudaLaunchKernelEx(&config, merge_partials<T, D, 1>, params));
    check_launch("merge_partials");
  });
}

void launch_naive(const NaiveParams& params, int num_queries, DType dtype, int head_dim, cudaStream_t stream) {
  if (num_queries == 0) return;
  dispatch(dtype, head_dim, [&](auto element, auto dim) {
    naive_attention<decltype(element), decltype(dim)::value><<<num_queries, kNaiveThreads, 0, stream>>>(params);
    check_launch("naive_attention");
  });
}

}  // namespace hydragen::cuda
