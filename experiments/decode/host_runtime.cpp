#include "decode/host_runtime.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decode/runtime_checks.hpp"

namespace hydragen::decode {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;

MatrixMap map(const Matrix& m) { return {static_cast<float*>(m.data), m.rows, m.cols, Eigen::OuterStride<>(m.ld)}; }
float* row(const Matrix& m, std::int64_t r) { return static_cast<float*>(m.data) + r * m.ld; }  // [cols]

// One head's D values rotated: element i with i + D/2 (rotate-half), in fp32.
void rotate(const float* x, const float* cosines, const float* sines, int half, float* out) {  // x, out: [D]; cosines, sines: [D / 2]
  for (int i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    out[i] = a * cosines[i] - b * sines[i];
    out[i + half] = b * cosines[i] + a * sines[i];
  }
}

class HostStepGraph final : public StepGraph {
 public:
  explicit HostStepGraph(std::function<void()> step) : step_(std::move(step)) {}
  void replay() override { step_(); }

 private:
  std::function<void()> step_;
};

// found(t, column, value) for each row t of logits [T, N]: its largest value among the first `valid`
// columns, the first of equal values (NaN never chosen; a row of NaN gives column 0 at -inf).
template <typename Found>
void each_row_best(const Matrix& logits, std::int64_t valid, Found found) {
#pragma omp parallel for
  for (std::int64_t t = 0; t < logits.rows; ++t) {
    const float* x = row(logits, t);  // [N]
    std::int64_t best = 0;
    float best_value = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < valid; ++j) {
      if (x[j] > best_value) {  // strictly: the first of equal values stays
        best = j;
        best_value = x[j];
      }
    }
    found(t, best, best_value);
  }
}

class HostRuntime final : public Runtime {
 public:
  std::string name() const override { return "host fp32"; }
  DType dtype() const override { return DType::fp32; }
  const DeviceMemory& memory() const override { return host_memory(); }
  Stream stream() const override { return {}; }

  Buffer upload(const std::vector<float>& values) const override {
    Buffer buffer(memory(), values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(buffer.data(), values.data(), buffer.bytes());
    return buffer;
  }
  Buffer zeros(std::int64_t count) const override {
    Buffer buffer(memory(), element_bytes("zeros", count, dtype()));
    if (count > 0) std::memset(buffer.data(), 0, buffer.bytes());
    return buffer;
  }
  std::vector<float> download(const Matrix& m) const override {
    check_download(dtype(), m);
    std::vector<float> values(static_cast<std::size_t>(m.rows * m.cols));
    Eigen::Map<RowMajor>(values.data(), m.rows, m.cols) = map(m);
    return values;
  }

  void embed(const int* tokens, const Matrix& table, const Matrix& x) override {
    check_embed(dtype(), tokens, table, x);
    for (std::int64_t t = 0; t < x.rows; ++t) {
      if (tokens[t] < 0 || tokens[t] >= table.rows) {
        throw std::invalid_argument("embed: token " + std::to_string(t) + " is " + std::to_string(tokens[t]) +
                                    ", not in [0, " + std::to_string(table.rows) + ")");
      }
    }
    MatrixMap out = map(x);
    const MatrixMap rows = map(table);
    for (std::int64_t t = 0; t < x.rows; ++t) out.row(t) = rows.row(tokens[t]);
  }

  void rms_norm(const Matrix& x, const void* w, float eps, const Matrix& out) override {
    check_rms_norm(dtype(), x, w, out);
    const MatrixMap in = map(x);
    MatrixMap result = map(out);
    const Eigen::Map<const Eigen::RowVectorXf> weight(static_cast<const float*>(w), x.cols);
    const auto cols = static_cast<float>(x.cols);
#pragma omp parallel for
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float scale = 1.0f / std::sqrt(in.row(r).squaredNorm() / cols + eps);
      result.row(r) = (in.row(r) * scale).cwiseProduct(weight);
    }
  }

  // Eigen's GEMM, parallel over OpenMP threads itself.
  void linear(const Matrix& a, const Matrix& w, const Matrix& c, bool accumulate) override {
    check_linear(dtype(), a, w, c);
    MatrixMap out = map(c);
    if (accumulate) {
      out.noalias() += map(a) * map(w).transpose();
    } else {
      out.noalias() = map(a) * map(w).transpose();
    }
  }

  void rope_append(const Matrix& qkv, int q_heads, int kv_heads, const Rotary& rotary, const CacheWrite& cache,
                   const Matrix& q) override {
    check_rope_append(dtype(), qkv, q_heads, kv_heads, rotary, cache, q);
    const int q_len = cache.q_len;
    auto position_of = [&](std::int64_t s, std::int64_t index) {
      return index + cache.position_offset + (cache.seq_offset != nullptr ? cache.seq_offset[s] : 0);
    };
    for (std::int64_t s = 0; s < qkv.rows / q_len; ++s) {
      if (cache.leaf_length[s] < q_len) {
        throw std::invalid_argument("rope_append: sequence " + std::to_string(s) + "'s leaf holds " +
                                    std::to_string(cache.leaf_length[s]) + " tokens, fewer than q_len " +
                                    std::to_string(q_len));
      }
      const std::int64_t last = position_of(s, cache.leaf_length[s] - 1);
      if (last >= rotary.positions || position_of(s, cache.leaf_length[s] - q_len) < 0) {
        throw std::invalid_argument("rope_append: sequence " + std::to_string(s) + "'s tokens reach position " +
                                    std::to_string(last) + ", outside the rotary table's [0, " +
                                    std::to_string(rotary.positions) + ")");
      }
    }
    const int half = rotary.head_dim / 2;
    const std::int64_t d = rotary.head_dim, kv_row = kv_heads * d;  // kv_row: one token of a leaf's K or V
#pragma omp parallel for
    for (std::int64_t t = 0; t < qkv.rows; ++t) {
      const std::int64_t s = t / q_len, index = cache.leaf_length[s] - q_len + t % q_len;
      const float* cosines = rotary.table + position_of(s, index) * d;  // [D / 2]
      const float* sines = cosines + half;                             // [D / 2]
      const float* x = row(qkv, t);                                     // [(Hq + 2 Hkv) D]
      float* k = static_cast<float*>(cache.k_leaf[s]) + index * kv_row; // [Hkv, D]
      float* v = static_cast<float*>(cache.v_leaf[s]) + index * kv_row; // [Hkv, D]
      for (int h = 0; h < q_heads; ++h) rotate(x + h * d, cosines, sines, half, row(q, t) + h * d);
      for (int h = 0; h < kv_heads; ++h) rotate(x + (q_heads + h) * d, cosines, sines, half, k + h * d);
      std::copy_n(x + q_heads * d + kv_row, kv_row, v);
    }
  }

  void swiglu(const Matrix& gate_up, const Matrix& out) override {
    check_swiglu(dtype(), gate_up, out);
    const std::int64_t f = out.cols;
#pragma omp parallel for
    for (std::int64_t t = 0; t < out.rows; ++t) {
      const float* x = row(gate_up, t);  // [2F]: gate, then up
      float* y = row(out, t);            // [F]
      for (std::int64_t j = 0; j < f; ++j) y[j] = x[j] / (1.0f + std::exp(-x[j])) * x[f + j];
    }
  }

  // NaN counts as -inf, so that every row has a largest value and both runtimes agree on it.
  void argmax(const Matrix& logits, std::int64_t valid, int* tokens) override {
    check_argmax(dtype(), logits, valid, tokens);
    each_row_best(logits, valid, [&](std::int64_t t, std::int64_t best, float) { tokens[t] = static_cast<int>(best); });
  }

  void argmax_keys(const Matrix& logits, std::int64_t valid, std::int64_t first_token, ArgmaxKey* keys) override {
    check_argmax(dtype(), logits, valid, keys, "keys", first_token);
    each_row_best(logits, valid, [&](std::int64_t t, std::int64_t best, float value) {
      keys[t] = argmax_key(value, static_cast<int>(first_token + best));
    });
  }

  void tokens_of(const ArgmaxKey* keys, int count, int* tokens) override {
    check_tokens_of(keys, count, tokens);
    for (int t = 0; t < count; ++t) tokens[t] = argmax_token(keys[t]);
  }

  void advance(int* leaf_length, int count, int by) override {
    check_advance(leaf_length, count);
    for (int s = 0; s < count; ++s) leaf_length[s] += by;
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }

  // Nothing runs now, as nothing runs while a CUDA runtime captures: the step runs at each replay.
  std::unique_ptr<StepGraph> capture(const std::function<void()>& step) override {
    return std::make_unique<HostStepGraph>(step);
  }
  void synchronize() const override {}
};

}  // namespace

std::unique_ptr<Runtime> host_runtime() { return std::make_unique<HostRuntime>(); }

}  // namespace hydragen::decode
