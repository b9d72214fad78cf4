#pragma once
// The dimensions of a problem's tensors (DESIGN.md section 2), for callers whose tensors carry their
// shapes: the Python package checks DLPack tensors with these before it hands run() bare views.
//   Q, O     [B, q_len, Hq, D]
//   K, V     [length, Hkv, D] per segment, or [total tokens, Hkv, D] for every segment back to back
//   LSE      [B, q_len, Hq]
#include <cstdint>
#include <string>
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "hydragen/tensor.hpp"

namespace hydragen {

struct Dim {
  const char* name;  // DESIGN.md's: "B", "q_len", "Hq", "Hkv", "D", "length", "tokens"
  std::int64_t size;
};
using Dims = std::vector<Dim>;

Dims query_dims(const AttentionShape& shape);  // Q and O
Dims lse_dims(const AttentionShape& shape);
Dims segment_dims(const AttentionShape& shape, const SharingTree& tree, int segment);
// Every segment's tokens back to back in segment order: tokens = tree.total_tokens().
Dims packed_dims(const AttentionShape& shape, const SharingTree& tree);

// "[B=4, q_len=1, Hq=8, D=128]"
std::string dims_text(const Dims& dims);

// Throws std::invalid_argument naming the tensor and the first dimension that differs, e.g.
// "k[2]: dim 0 (length) is 5, expected 4 (shape [5, 1, 64], expected [length=4, Hkv=1, D=64])".
void check_dims(const std::string& tensor, const std::vector<std::int64_t>& sizes, const Dims& expected);

// The shape that Q [B, q_len, Hq, D] and a segment's K [length, Hkv, D] describe, with `scale`
// (0: 1/sqrt(D)). Throws std::invalid_argument naming the tensor of the wrong rank, a D on which they
// disagree, or a dimension past int; the result is not validated (validate_problem does that).
AttentionShape shape_from_dims(const std::vector<std::int64_t>& q, const std::vector<std::int64_t>& k, DType dtype,
                               float scale = 0);

// The views of each segment in one buffer laid out as packed_dims: how a caller with one KV
// allocation hands it to run() (a segment of no tokens gets a null view).
std::vector<ConstTensor> segment_views(const ConstTensor& packed, const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen
