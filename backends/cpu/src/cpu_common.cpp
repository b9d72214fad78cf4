#include "cpu_common.hpp"

#include <omp.h>

#include <string>

#include "widen.hpp"

namespace hydragen::cpu {

Support cpu_supports(const AttentionShape& shape) {
  if (shape.dtype == DType::fp64) return Support::no("dtype fp64 (CPU backends take fp32, fp16 or bf16; fp64 is the reference's)");
  if (shape.head_dim > kMaxHeadDim) {
    return Support::no("head_dim " + std::to_string(shape.head_dim) + " (CPU backends support D <= " +
                       std::to_string(kMaxHeadDim) + ")");
  }
  return Support::yes();
}

void widen_queries(const AttentionShape& shape, const ConstTensor& q, std::vector<float>& out) {
  const std::size_t rows = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
  const std::size_t elem = dtype_size(shape.dtype);
  out.resize(rows * shape.head_dim);
  dispatch_storage(shape.dtype, [&](auto tag) {
    for (std::size_t r = 0; r < rows; ++r) {
      widen_row<decltype(tag)>(static_cast<const unsigned char*>(q.data) + r * shape.head_dim * elem,
                               out.data() + r * shape.head_dim, shape.head_dim);
    }
  });
}

void gather_rows(const AttentionShape& shape, const float* q32, const std::vector<int>& seqs, int kv_head,
                 RowMatrix& rows) {
  const QueryIndex index = query_index(shape);
  const int per_seq = index.rows_per_seq(), d = shape.head_dim;
  rows.resize(static_cast<Eigen::Index>(seqs.size()) * per_seq, d);
  Eigen::Index r = 0;
  for (int seq : seqs) {
    for (int stacked = 0; stacked < per_seq; ++stacked) {
      rows.row(r++) = Eigen::Map<const Eigen::RowVectorXf>(q32 + index.stacked_row(seq, kv_head, stacked) * d, d);
    }
  }
}

std::vector<long long> row_limits(const AttentionShape& shape, std::size_t num_seqs, long long len, bool is_leaf) {
  const int g = shape.group_size();
  std::vector<long long> limits;
  limits.reserve(num_seqs * shape.q_len * g);
  for (std::size_t s = 0; s < num_seqs; ++s) {
    for (int qi = 0; qi < shape.q_len; ++qi) {
      limits.insert(limits.end(), g, attended_tokens(len, is_leaf, shape.q_len, qi));
    }
  }
  return limits;
}

void write_rows(const AttentionShape& shape, const Partial& result, int first_row, int seq, int kv_head,
                const AttentionOutputs& out) {
  const QueryIndex index = query_index(shape);
  const int d = shape.head_dim;
  const std::size_t elem = dtype_size(shape.dtype);
  auto* lse = static_cast<float*>(out.lse.data);
  dispatch_storage(shape.dtype, [&](auto tag) {
    for (int stacked = 0; stacked < index.rows_per_seq(); ++stacked) {
      const auto row = static_cast<std::size_t>(index.stacked_row(seq, kv_head, stacked));
      narrow_row<decltype(tag)>(result.o.row(first_row + stacked).data(), static_cast<unsigned char*>(out.o.data) + row * d * elem, d);
      lse[row] = result.lse[first_row + stacked];
    }
  });
}

KvSlice kv_slice(const AttentionShape& shape, const ConstTensor& t, int kv_head) {
  return KvSlice{t.data, shape.dtype, shape.kv_heads, shape.head_dim, kv_head};
}

std::size_t cpu_plan_bytes(const AttentionShape& shape, int max_rows) {
  const auto rows = static_cast<std::size_t>(max_rows), d = static_cast<std::size_t>(shape.head_dim);
  const std::size_t tile = kTileTokens;
  const std::size_t workspace = 2 * tile * d + rows * tile + rows * d + rows;  // Workspace::reserve
  const std::size_t running = rows * d + (rows * d + rows);                     // gathered q, Partial
  const std::size_t q32 = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * d;
  return (static_cast<std::size_t>(omp_get_max_threads()) * (workspace + running) + q32) * sizeof(float);
}

CpuPlan::CpuPlan(const AttentionShape& shape, const SharingTree& tree, int max_rows)
    : shape_(shape), tree_(tree), threads_(omp_get_max_threads()), workspaces_(threads_) {
  for (Workspace& ws : workspaces_) ws.reserve(max_rows, shape.head_dim);
  q32_.resize(static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * shape.head_dim);
}

void CpuPlan::prepare(const AttentionInputs& in, const AttentionOutputs& out) {
  check_io(shape_, tree_, in, out);
  lengths_ = run_lengths(shape_, tree_, in);
  widen_queries(shape_, in.q, q32_);
}

}  // namespace hydragen::cpu
