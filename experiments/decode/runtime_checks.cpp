#include "decode/runtime_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "hydragen/dtype.hpp"

namespace hydragen::decode {
namespace {

[[noreturn]] void refuse(const char* op, const std::string& what) { throw std::invalid_argument(std::string(op) + ": " + what); }

std::string shape(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

void check_pointer(const char* op, const char* name, const void* p, bool needed) {
  if (needed && p == nullptr) refuse(op, std::string(name) + " is null");
}

// Of the runtime's dtype, a shape that can hold elements, ld >= cols, data where there are elements.
void check_matrix(const char* op, const char* name, const Matrix& m, DType dtype) {
  const std::string n(name);
  if (m.dtype != dtype) {
    refuse(op, n + " is " + std::string(dtype_name(m.dtype)) + ", the runtime's dtype is " + std::string(dtype_name(dtype)));
  }
  if (m.rows < 0 || m.cols < 0) refuse(op, n + " is " + shape(m.rows, m.cols));
  if (m.ld < m.cols) refuse(op, n + " has ld " + std::to_string(m.ld) + " < cols " + std::to_string(m.cols));
  check_pointer(op, name, m.data, m.rows > 0 && m.cols > 0);
}

// check_matrix, and the shape the other operands give it (`from` says how).
void check_shape(const char* op, const char* name, const Matrix& m, DType dtype, std::int64_t rows, std::int64_t cols,
                 const char* from) {
  check_matrix(op, name, m, dtype);
  if (m.rows != rows || m.cols != cols) {
    refuse(op, std::string(name) + " is " + shape(m.rows, m.cols) + ", expected " + shape(rows, cols) + " (" + from + ")");
  }
}

void check_positive(const char* op, const char* name, std::int64_t value) {
  if (value <= 0) refuse(op, std::string(name) + " " + std::to_string(value) + " is not positive");
}

}  // namespace

std::size_t element_bytes(const char* op, std::int64_t count, DType dtype) {
  if (count < 0) refuse(op, "count " + std::to_string(count) + " is negative");
  return static_cast<std::size_t>(count) * dtype_size(dtype);
}

std::vector<std::uint16_t> exact_bf16_bits(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits(values.size());
  const auto n = static_cast<std::int64_t>(values.size());
  std::int64_t first_bad = n;
#pragma omp parallel for reduction(min : first_bad)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = values[static_cast<std::size_t>(i)];
    bits[static_cast<std::size_t>(i)] = float_to_bf16_bits(v);
    if (bf16_bits_to_float(bits[static_cast<std::size_t>(i)]) != v && !std::isnan(v)) first_bad = std::min(first_bad, i);
  }
  if (first_bad < n) {
    refuse("upload", "value " + std::to_string(first_bad) + " (" + std::to_string(values[static_cast<std::size_t>(first_bad)]) +
                         ") is not a bf16 value");
  }
  return bits;
}

void check_download(DType dtype, const Matrix& m) { check_matrix("download", "m", m, dtype); }

void check_embed(DType dtype, const int* tokens, const Matrix& table, const Matrix& x) {
  check_matrix("embed", "table", table, dtype);
  check_shape("embed", "x", x, dtype, x.rows, table.cols, "tokens x table's columns");
  check_pointer("embed", "tokens", tokens, x.rows > 0);
}

void check_rms_norm(DType dtype, const Matrix& x, const void* w, const Matrix& out) {
  check_matrix("rms_norm", "x", x, dtype);
  check_shape("rms_norm", "out", out, dtype, x.rows, x.cols, "x's shape");
  check_pointer("rms_norm", "w", w, x.cols > 0);
}

void check_linear(DType dtype, const Matrix& a, const Matrix& w, const Matrix& c) {
  check_matrix("linear", "a", a, dtype);
  check_shape("linear", "w", w, dtype, w.rows, a.cols, "w's rows x a's columns");
  check_shape("linear", "c", c, dtype, a.rows, w.rows, "a's rows x w's rows");
}

void check_rope_append(DType dtype, const Matrix& qkv, int q_heads, int kv_heads, const Rotary& rotary,
                       const CacheWrite& cache, const Matrix& q) {
  const char* op = "rope_append";
  check_positive(op, "q_heads", q_heads);
  check_positive(op, "kv_heads", kv_heads);
  const int head_dim = rotary.head_dim;
  check_positive(op, "rotary.head_dim", head_dim);
  if (head_dim % 2 != 0) refuse(op, "rotary.head_dim " + std::to_string(head_dim) + " is odd (rotate-half pairs)");
  check_positive(op, "rotary.positions", rotary.positions);
  check_pointer(op, "rotary.table", rotary.table, true);
  check_positive(op, "cache.q_len", cache.q_len);
  const std::int64_t d = head_dim;
  check_shape(op, "qkv", qkv, dtype, qkv.rows, (q_heads + 2LL * kv_heads) * d, "tokens x (q_heads + 2 kv_heads) head_dim");
  if (qkv.rows % cache.q_len != 0) {
    refuse(op, "qkv has " + std::to_string(qkv.rows) + " rows, not a multiple of cache.q_len " + std::to_string(cache.q_len));
  }
  check_shape(op, "q", q, dtype, qkv.rows, q_heads * d, "qkv's rows x q_heads head_dim");
  const bool tokens = qkv.rows > 0;
  check_pointer(op, "cache.k_leaf", cache.k_leaf, tokens);
  check_pointer(op, "cache.v_leaf", cache.v_leaf, tokens);
  check_pointer(op, "cache.leaf_length", cache.leaf_length, tokens);
}

void check_swiglu(DType dtype, const Matrix& gate_up, const Matrix& out) {
  check_matrix("swiglu", "gate_up", gate_up, dtype);
  if (gate_up.cols % 2 != 0) refuse("swiglu", "gate_up has " + std::to_string(gate_up.cols) + " columns, an odd number");
  check_shape("swiglu", "out", out, dtype, gate_up.rows, gate_up.cols / 2, "gate_up's rows x half its columns");
}

void check_argmax(DType dtype, const Matrix& logits, std::int64_t valid, const void* out, const char* out_name,
                  std::int64_t first_token) {
  check_matrix("argmax", "logits", logits, dtype);
  // tokens are ints, so the columns searched must be too.
  if (valid < 1 || valid > logits.cols || valid > std::numeric_limits<int>::max()) {
    refuse("argmax", "valid " + std::to_string(valid) + " is not in [1, logits' " + std::to_string(logits.cols) + " columns]");
  }
  if (first_token < 0 || first_token > std::numeric_limits<int>::max() - valid) {
    refuse("argmax", "the shard's first token " + std::to_string(first_token) + " leaves the int range");
  }
  check_pointer("argmax", out_name, out, logits.rows > 0);
}

void check_tokens_of(const ArgmaxKey* keys, int count, const int* tokens) {
  if (count < 0) refuse("tokens_of", "count " + std::to_string(count) + " is negative");
  check_pointer("tokens_of", "keys", keys, count > 0);
  check_pointer("tokens_of", "tokens", tokens, count > 0);
}

void check_advance(const int* leaf_length, int count) {
  if (count < 0) refuse("advance", "count " + std::to_string(count) + " is negative");
  check_pointer("advance", "leaf_length", leaf_length, count > 0);
}

}  // namespace hydragen::decode
