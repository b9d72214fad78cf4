#pragma once
// cuda-hydragen-cublas's shared segments, the paper's sentence taken literally ("attention becomes
// matrix-matrix products"): the queries of every sequence below a shared segment gathered into one
// matrix per KV head, then for each GEMM chunk of the schedule (a range of the segment's tokens):
//   S = Q K^T        cuBLAS, strided-batched over the KV heads, fp32 out
//   P, LSE           chunk_softmax: P in the storage dtype, normalized over the chunk; each row's LSE
//   O = P V          cuBLAS, strided-batched, fp32 into the partial rows
// The merge kernel combines the chunks with the rest, as for every backend. The score matrix is
// bounded by the schedule's chunk size, not by the prefix length.
#include <cuda_runtime_api.h>

#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "hydragen/cuda/handles.hpp"
#include "params.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

class GemmAttention {
 public:
  // Allocates the gathered queries, the largest chunk's scores and probabilities, and a workspace for
  // cuBLAS (so that a run captured in a graph allocates nothing).
  GemmAttention(const AttentionShape& shape, const Schedule& schedule);
  // What the constructor allocates on the device.
  static std::size_t device_bytes(const AttentionShape& shape, const Schedule& schedule);

  // Enqueues every chunk on `stream`: the partial rows and LSEs of `merge` get written; `row_limit`
  // is the schedule's, on the device.
  void enqueue(const AttentionInputs& in, const MergeParams& merge, const int* row_limit, float scale_log2,
               cudaStream_t stream);

 private:
  AttentionShape shape_;
  std::vector<GemmChunk> chunks_;
  DeviceArray<int> gather_query_;              // [gathered rows] query row of each
  DeviceArray<unsigned char> gathered_;        // [gathered rows, D] storage dtype
  DeviceArray<float> scores_;                  // [largest chunk: Hkv * rows * row_stride]
  DeviceArray<unsigned char> probabilities_;   // the same elements, storage dtype
  DeviceArray<unsigned char> cublas_workspace_;
  OwnedCublas cublas_;
};

}  // namespace hydragen::cuda
