#include "gemm_attention.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "hydragen/cuda/check.hpp"
#include "kernels/launch.hpp"

namespace hydragen::cuda {

namespace {

// cuBLAS wants leading dimensions of 16-byte multiples for its fastest kernels.
int row_stride(const GemmChunk& c) { return (c.token_end - c.token_begin + 7) / 8 * 8; }

long long chunk_scores(const AttentionShape& shape, const GemmChunk& c) {
  return static_cast<long long>(shape.kv_heads) * c.rows * row_stride(c);
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::fp32: return CUDA_R_32F;
    case DType::fp16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: break;
  }
  throw std::invalid_argument("cuda-hydragen-cublas: dtype " + std::string(dtype_name(dtype)) + " has no cuBLAS path");
}

constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;  // what cuBLAS asks for on Hopper
// What cuBLAS itself takes on the device when a process first creates a handle and runs its GEMMs
// (its kernels loaded): 70 MB on an H100 (cudaMemGetInfo, 2026-11-23). Counted for every plan, so
// a later plan is over-counted by it, never under.
constexpr std::size_t kCublasLibraryBytes = std::size_t{96} << 20;

}  // namespace

namespace {
long long most_chunk_scores(const AttentionShape& shape, const std::vector<GemmChunk>& chunks) {
  long long most = 0;
  for (const GemmChunk& c : chunks) most = std::max(most, chunk_scores(shape, c));
  return most;
}
}  // namespace

std::size_t GemmAttention::device_bytes(const AttentionShape& shape, const Schedule& schedule) {
  const std::size_t elem = dtype_size(shape.dtype), rows = schedule.gather_query.size();
  const auto scores = static_cast<std::size_t>(most_chunk_scores(shape, schedule.gemm_chunks));
  return rows * sizeof(int) + rows * shape.head_dim * elem + scores * (sizeof(float) + elem) + kCublasWorkspaceBytes +
         kCublasLibraryBytes;
}

GemmAttention::GemmAttention(const AttentionShape& shape, const Schedule& schedule)
    : shape_(shape),
      chunks_(schedule.gemm_chunks),
      gather_query_(upload(schedule.gather_query)),
      gathered_(schedule.gather_query.size() * shape.head_dim * dtype_size(shape.dtype)),
      cublas_workspace_(kCublasWorkspaceBytes) {
  const long long most = most_chunk_scores(shape, chunks_);
  scores_ = DeviceArray<float>(static_cast<std::size_t>(most));
  probabilities_ = DeviceArray<unsigned char>(static_cast<std::size_t>(most) * dtype_size(shape.dtype));
  CUBLAS_CHECK(cublasSetWorkspace(cublas_.get(), cublas_workspace_.data(), cublas_workspace_.bytes()));
}

void GemmAttention::enqueue(const AttentionInputs& in, const MergeParams& merge, const int* row_limit, float scale_log2,
                            cudaStream_t stream) {
  const int d = shape_.head_dim, kv_heads = shape_.kv_heads;
  const std::size_t elem = dtype_size(shape_.dtype);
  const cudaDataType_t type = cuda_type(shape_.dtype);
  GatherParams gather;
  gather.q = in.q.data;
  gather.gathered = gathered_.data();
  gather.row_query = gather_query_.data();
  gather.num_rows = static_cast<int>(gather_query_.size());
  launch_gather(gather, shape_.dtype, d, stream);
  CUBLAS_CHECK(cublasSetStream(cublas_.get(), stream));
  const float one = 1.f, zero = 0.f;
  for (const GemmChunk& c : chunks_) {
    const int tokens = c.token_end - c.token_begin, ld = row_stride(c);
    // Row-major [tokens, Hkv, D] K and V from the chunk's first token; KV head h is D elements on.
    const long long kv_offset = static_cast<long long>(c.token_begin) * kv_heads * d;
    const auto* k = static_cast<const unsigned char*>(in.k[c.segment].data) + kv_offset * elem;
    const auto* v = static_cast<const unsigned char*>(in.v[c.segment].data) + kv_offset * elem;
    const auto* q = gathered_.data() + static_cast<std::size_t>(c.gathered_row) * d * elem;
    // S_h [rows][ld] = Q_h K_h^T, column-major: S_h^T (tokens x rows) = op_T(K_h as D x tokens) * Q_h^T (D x rows).
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, tokens, c.rows, d, &one, k, type,
                                            kv_heads * d, d, q, type, d, static_cast<long long>(c.rows) * d, &zero,
                                            scores_.data(), CUDA_R_32F, ld, static_cast<long long>(c.rows) * ld, kv_heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    ChunkSoftmaxParams softmax;
    softmax.scores = scores_.data();
    softmax.probabilities = probabilities_.data();
    softmax.partial_lse = merge.partial_lse;
    softmax.row_limit = row_limit;
    softmax.rows = c.rows;
    softmax.kv_heads = kv_heads;
    softmax.tokens = tokens;
    softmax.row_stride = ld;
    softmax.token_begin = c.token_begin;
    softmax.first_row = c.first_row;
    softmax.scale_log2 = scale_log2;
    launch_chunk_softmax(softmax, shape_.dtype, stream);
    // O_h [rows][D] = P_h V_h, column-major: O_h^T (D x rows) = V_h^T (D x tokens) * P_h^T (tokens x rows).
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, d, c.rows, tokens, &one, v, type,
                                            kv_heads * d, d, probabilities_.data(), type, ld,
                                            static_cast<long long>(c.rows) * ld, &zero,
                                            merge.partial_o + static_cast<std::size_t>(c.first_row) * d, CUDA_R_32F, d,
                                            static_cast<long long>(c.rows) * d, kv_heads, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace hydragen::cuda
