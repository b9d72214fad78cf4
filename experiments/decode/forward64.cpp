#include "decode/forward64.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace hydragen::decode {

namespace {

using FloatRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The whole tensor as [rows, max(1, cols)] (a norm comes back as one column).
Eigen::MatrixXd load(const WeightSource& weights, const TensorSpec& spec, const ModelShard& whole) {
  const std::vector<float> values = weights.load(spec, whole, 0);
  const Eigen::Index rows = spec.rows, cols = std::max<Eigen::Index>(1, spec.cols);
  if (static_cast<Eigen::Index>(values.size()) != rows * cols) {
    throw std::runtime_error(weights.describe() + ": " + spec.name + " has " + std::to_string(values.size()) +
                             " values, expected " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  return Eigen::Map<const FloatRows>(values.data(), rows, cols).cast<double>();
}

// Each row of x [T, H] divided by its root mean square, times w [H].
Eigen::MatrixXd rms_norm(const Eigen::MatrixXd& x, const Eigen::RowVectorXd& w, double eps) {
  Eigen::MatrixXd out(x.rows(), x.cols());  // [T, H]
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const double rms = std::sqrt(x.row(t).squaredNorm() / static_cast<double>(x.cols()) + eps);
    out.row(t) = (x.row(t) / rms).cwiseProduct(w);
  }
  return out;
}

// Rotates each head's pairs (i, i + D/2) of x [T, heads D] by the angle position * theta^(-2i/D):
// Hugging Face Llama's rotate-half convention. Row t is at position position_offset + t.
void rope(Eigen::MatrixXd& x, int heads, int head_dim, double theta, int position_offset) {
  const int half = head_dim / 2;
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const auto position = static_cast<double>(position_offset + t);
    for (int i = 0; i < half; ++i) {
      const double angle = position * std::pow(theta, -2.0 * i / head_dim);
      const double c = std::cos(angle), s = std::sin(angle);
      for (int h = 0; h < heads; ++h) {
        double& a = x(t, h * head_dim + i);
        double& b = x(t, h * head_dim + i + half);
        const double a0 = a, b0 = b;
        a = a0 * c - b0 * s;
        b = b0 * c + a0 * s;
      }
    }
  }
}

// Softmax attention of one head, row t attending keys 0..t, scale 1/sqrt(D): q, k, v [T, D] -> [T, D].
// The last row skips key `dropped` (none when negative).
Eigen::MatrixXd causal_attention(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v, int dropped) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.cols()));
  Eigen::MatrixXd out(q.rows(), q.cols());  // [T, D]
  for (Eigen::Index t = 0; t < q.rows(); ++t) {
    const Eigen::RowVectorXd scores = q.row(t) * k.topRows(t + 1).transpose() * scale;  // [t + 1]
    Eigen::RowVectorXd p = (scores.array() - scores.maxCoeff()).exp().matrix();  // [t + 1], unnormalized
    if (t == q.rows() - 1 && dropped >= 0) p[dropped] = 0;
    out.row(t) = p * v.topRows(t + 1) / p.sum();
  }
  return out;
}

// The column of the row's largest value, the lowest on ties (what every decoder's argmax returns).
int argmax(const Eigen::RowVectorXd& row) {
  Eigen::Index best = 0;
  for (Eigen::Index i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return static_cast<int>(best);
}

}  // namespace

Forward64::Forward64(const ModelConfig& model, const WeightSource& weights)
    : model_(model), layers_(static_cast<std::size_t>(model.layers)) {
  const ModelShard whole = shard(model, 1);
  for (const TensorSpec& spec : tensor_specs(model)) {
    Eigen::MatrixXd m = load(weights, spec, whole);
    Layer* layer = spec.layer >= 0 ? &layers_[static_cast<std::size_t>(spec.layer)] : nullptr;
    switch (spec.role) {
      case Role::embed: embed_ = std::move(m); break;
      case Role::attn_norm: layer->attn_norm = m.transpose(); break;
      case Role::q: layer->q = std::move(m); break;
      case Role::k: layer->k = std::move(m); break;
      case Role::v: layer->v = std::move(m); break;
      case Role::o: layer->o = std::move(m); break;
      case Role::mlp_norm: layer->mlp_norm = m.transpose(); break;
      case Role::gate: layer->gate = std::move(m); break;
      case Role::up: layer->up = std::move(m); break;
      case Role::down: layer->down = std::move(m); break;
      case Role::final_norm: final_norm_ = m.transpose(); break;
      case Role::lm_head: lm_head_ = std::move(m); break;
    }
  }
}

Eigen::MatrixXd Forward64::logits(const std::vector<int>& tokens, int position_offset, int dropped_key) const {
  if (position_offset < 0) {
    throw std::invalid_argument("position_offset must be at least 0, got " + std::to_string(position_offset));
  }
  const auto count = static_cast<Eigen::Index>(tokens.size());
  if (dropped_key >= count - 1) {
    throw std::invalid_argument("dropped_key " + std::to_string(dropped_key) + " is not a key before the last of " +
                                std::to_string(count) + " tokens");
  }
  Eigen::MatrixXd x(count, model_.hidden);  // [T, H], the residual stream
  for (Eigen::Index t = 0; t < count; ++t) {
    const int token = tokens[static_cast<std::size_t>(t)];
    if (token < 0 || token >= model_.vocab) {
      throw std::invalid_argument("token " + std::to_string(token) + " at index " + std::to_string(t) +
                                  " is outside the vocabulary [0, " + std::to_string(model_.vocab) + ") of " +
                                  model_.name);
    }
    x.row(t) = embed_.row(token);
  }
  for (const Layer& layer : layers_) {
    x += attention(layer, rms_norm(x, layer.attn_norm, model_.rms_eps), position_offset, dropped_key);
    x += mlp(layer, rms_norm(x, layer.mlp_norm, model_.rms_eps));
  }
  return rms_norm(x, final_norm_, model_.rms_eps) * lm_head_.transpose();  // [T, V]
}

// The attention block's output projection of n [T, H] (the normed residual): [T, H].
Eigen::MatrixXd Forward64::attention(const Layer& layer, const Eigen::MatrixXd& n, int position_offset, int dropped_key) const {
  const int d = model_.head_dim, group = model_.q_heads / model_.kv_heads;
  Eigen::MatrixXd q = n * layer.q.transpose();        // [T, Hq D]
  Eigen::MatrixXd k = n * layer.k.transpose();        // [T, Hkv D]
  const Eigen::MatrixXd v = n * layer.v.transpose();  // [T, Hkv D]
  rope(q, model_.q_heads, d, model_.rope_theta, position_offset);
  rope(k, model_.kv_heads, d, model_.rope_theta, position_offset);
  Eigen::MatrixXd heads(n.rows(), q.cols());  // [T, Hq D]
#pragma omp parallel for schedule(static)
  for (int h = 0; h < model_.q_heads; ++h) {
    const int kv = h / group;  // grouped-query: g consecutive query heads share a KV head
    heads.middleCols(h * d, d) =
        causal_attention(q.middleCols(h * d, d), k.middleCols(kv * d, d), v.middleCols(kv * d, d), dropped_key);
  }
  return heads * layer.o.transpose();
}

// SwiGLU of n [T, H] (the normed residual): [T, H].
Eigen::MatrixXd Forward64::mlp(const Layer& layer, const Eigen::MatrixXd& n) const {
  const Eigen::ArrayXXd gate = (n * layer.gate.transpose()).array();  // [T, F]
  const Eigen::ArrayXXd up = (n * layer.up.transpose()).array();      // [T, F]
  const Eigen::MatrixXd silu_gate_up = (gate / (1.0 + (-gate).exp()) * up).matrix();  // [T, F]
  return silu_gate_up * layer.down.transpose();
}

std::vector<int> Forward64::greedy(const std::vector<int>& prompt, int steps) const {
  if (prompt.empty()) throw std::invalid_argument("greedy needs a non-empty prompt");
  if (steps < 0) throw std::invalid_argument("greedy steps must be at least 0, got " + std::to_string(steps));
  std::vector<int> sequence = prompt;
  for (int i = 0; i < steps; ++i) {
    const Eigen::MatrixXd all = logits(sequence);  // [sequence, V]
    sequence.push_back(argmax(all.bottomRows(1)));
  }
  return {sequence.begin() + static_cast<std::ptrdiff_t>(prompt.size()), sequence.end()};
}

}  // namespace hydragen::decode
