#include "hydragen/tensor_dims.hpp"

#include <limits>
#include <stdexcept>

namespace hydragen {

namespace {

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

int as_int(const std::string& tensor, const char* dim, std::int64_t size) {
  if (size > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(tensor + ": " + dim + " = " + std::to_string(size) + " is past the largest int");
  }
  return static_cast<int>(size);
}

}  // namespace

Dims query_dims(const AttentionShape& s) {
  return {{"B", s.num_seqs}, {"q_len", s.q_len}, {"Hq", s.q_heads}, {"D", s.head_dim}};
}

Dims lse_dims(const AttentionShape& s) { return {{"B", s.num_seqs}, {"q_len", s.q_len}, {"Hq", s.q_heads}}; }

Dims segment_dims(const AttentionShape& s, const SharingTree& tree, int segment) {
  return {{"length", tree.length(segment)}, {"Hkv", s.kv_heads}, {"D", s.head_dim}};
}

Dims packed_dims(const AttentionShape& s, const SharingTree& tree) {
  return {{"tokens", tree.total_tokens()}, {"Hkv", s.kv_heads}, {"D", s.head_dim}};
}

std::string dims_text(const Dims& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::string(dims[i].name) + "=" + std::to_string(dims[i].size);
  }
  return s + "]";
}

void check_dims(const std::string& tensor, const std::vector<std::int64_t>& sizes, const Dims& expected) {
  const std::string both = " (shape " + sizes_text(sizes) + ", expected " + dims_text(expected) + ")";
  if (sizes.size() != expected.size()) {
    throw std::invalid_argument(tensor + ": " + std::to_string(sizes.size()) + " dims, expected " +
                                std::to_string(expected.size()) + both);
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] != expected[i].size) {
      throw std::invalid_argument(tensor + ": dim " + std::to_string(i) + " (" + expected[i].name + ") is " +
                                  std::to_string(sizes[i]) + ", expected " + std::to_string(expected[i].size) + both);
    }
  }
}

AttentionShape shape_from_dims(const std::vector<std::int64_t>& q, const std::vector<std::int64_t>& k, DType dtype,
                               float scale) {
  if (q.size() != 4) {
    throw std::invalid_argument("q: " + std::to_string(q.size()) + " dims " + sizes_text(q) +
                                ", expected 4: [B, q_len, Hq, D]");
  }
  if (k.size() != 3) {
    throw std::invalid_argument("k: " + std::to_string(k.size()) + " dims " + sizes_text(k) +
                                ", expected 3: [length, Hkv, D]");
  }
  if (k[2] != q[3]) {
    throw std::invalid_argument("k: D is " + std::to_string(k[2]) + " but q's D is " + std::to_string(q[3]) +
                                " (k " + sizes_text(k) + ", q " + sizes_text(q) + ")");
  }
  AttentionShape shape = make_shape(as_int("q", "B", q[0]), as_int("q", "q_len", q[1]), as_int("q", "Hq", q[2]),
                                    as_int("k", "Hkv", k[1]), as_int("q", "D", q[3]), dtype);
  if (scale != 0) shape.scale = scale;
  return shape;
}

std::vector<ConstTensor> segment_views(const ConstTensor& packed, const AttentionShape& shape, const SharingTree& tree) {
  const std::size_t row = static_cast<std::size_t>(shape.kv_heads) * shape.head_dim;
  const std::size_t need = static_cast<std::size_t>(tree.total_tokens()) * row;
  if (packed.numel < need) {
    throw std::invalid_argument("packed segments: buffer holds " + std::to_string(packed.numel) +
                                " elements, the tree's " + std::to_string(tree.total_tokens()) + " tokens need " +
                                std::to_string(need));
  }
  const auto* base = static_cast<const std::byte*>(packed.data);
  std::vector<ConstTensor> views;
  std::size_t offset = 0;  // elements
  for (int i = 0; i < tree.num_segments(); ++i) {
    const std::size_t n = static_cast<std::size_t>(tree.length(i)) * row;
    views.push_back(ConstTensor{n == 0 ? nullptr : base + offset * dtype_size(packed.dtype), packed.dtype, n});
    offset += n;
  }
  return views;
}

}  // namespace hydragen
