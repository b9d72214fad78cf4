#include "scratch_problem.hpp"

#include <cuda_runtime_api.h>

#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/timing.hpp"

namespace hydragen::cuda {

namespace {

struct Counts {
  std::size_t queries;  // elements of Q (and O)
  std::size_t lse;      // elements of LSE
  std::size_t row;      // elements of one token's K (or V)
};

Counts counts(const AttentionShape& shape) {
  const std::size_t rows = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
  return {rows * shape.head_dim, rows, static_cast<std::size_t>(shape.kv_heads) * shape.head_dim};
}

// `count` elements of `dtype`, random (fill_random) from `seed` on the default stream.
DeviceArray<unsigned char> random(DType dtype, std::size_t count, unsigned seed) {
  DeviceArray<unsigned char> a(count * dtype_size(dtype));
  fill_random(a.data(), dtype, count, seed, nullptr);
  return a;
}

}  // namespace

std::size_t ScratchProblem::bytes(const AttentionShape& shape, const SharingTree& tree) {
  const Counts c = counts(shape);
  const std::size_t kv = static_cast<std::size_t>(tree.total_tokens()) * c.row;
  return (2 * c.queries + 2 * kv) * dtype_size(shape.dtype) + c.lse * dtype_size(lse_dtype(shape.dtype));
}

ScratchProblem::ScratchProblem(const AttentionShape& shape, const SharingTree& tree) {
  const Counts c = counts(shape);
  const std::size_t elem = dtype_size(shape.dtype);
  q_ = random(shape.dtype, c.queries, 1);
  o_ = DeviceArray<unsigned char>(c.queries * elem);  // outputs: every run writes them whole
  lse_ = DeviceArray<unsigned char>(c.lse * dtype_size(lse_dtype(shape.dtype)));
  in_.q = {q_.data(), shape.dtype, c.queries};
  for (int s = 0; s < tree.num_segments(); ++s) {
    const std::size_t n = static_cast<std::size_t>(tree.length(s)) * c.row;
    k_.push_back(random(shape.dtype, n, 2 * s + 2));
    v_.push_back(random(shape.dtype, n, 2 * s + 3));
    in_.k.push_back({k_.back().data(), shape.dtype, n});
    in_.v.push_back({v_.back().data(), shape.dtype, n});
  }
  out_.o = {o_.data(), shape.dtype, c.queries};
  out_.lse = {lse_.data(), lse_dtype(shape.dtype), c.lse};
  CUDA_CHECK(cudaStreamSynchronize(nullptr));  // filled before any stream, blocking or not, reads them
}

}  // namespace hydragen::cuda
