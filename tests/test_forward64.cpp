// The fp64 forward pass, the definition the decoders are checked against: against the model's math
// written out in plain loops from the weight source's own values, and through properties a wrong
// definition breaks (causality, relative positions, the grouped-query head mapping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decode/forward64.hpp"
#include "decode/model_config.hpp"
#include "decode/weights.hpp"

namespace hydragen::decode {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Vec = std::vector<double>;

// The model's tensors as the weight source gives them, by name, row-major: the loops below read
// these, not Forward64's copies.
class Tensors {
 public:
  Tensors(const ModelConfig& model, const WeightSource& weights) {
    const ModelShard whole = shard(model, 1);
    for (const TensorSpec& spec : tensor_specs(model)) {
      const std::vector<float> values = weights.load(spec, whole, 0);
      values_[spec.name] = Vec(values.begin(), values.end());
    }
  }

  const Vec& operator[](const std::string& name) const { return values_.at(name); }

  // W x for the linear layer `name`, [rows, x.size()].
  Vec times(const std::string& name, const Vec& x) const {
    const Vec& w = values_.at(name);
    Vec y(w.size() / x.size(), 0.0);
    for (std::size_t r = 0; r < y.size(); ++r) {
      for (std::size_t c = 0; c < x.size(); ++c) y[r] += w[r * x.size() + c] * x[c];
    }
    return y;
  }

 private:
  std::map<std::string, Vec> values_;
};

std::string in_layer(int layer, const std::string& tensor) {
  return "model.layers." + std::to_string(layer) + "." + tensor + ".weight";
}

Vec rms_norm(const Vec& x, const Vec& w, double eps) {
  double squares = 0;
  for (double e : x) squares += e * e;
  const double rms = std::sqrt(squares / static_cast<double>(x.size()) + eps);
  Vec out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] / rms * w[i];
  return out;
}

void add_to(Vec& x, const Vec& y) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Vec embedding(const ModelConfig& m, const Tensors& w, int token) {
  const Vec& table = w["model.embed_tokens.weight"];
  const auto first = table.begin() + static_cast<std::ptrdiff_t>(token) * m.hidden;
  return {first, first + m.hidden};
}

// x += down(silu(gate n) * up n), n the post-attention norm of x.
void add_mlp(const ModelConfig& m, const Tensors& w, int layer, Vec& x) {
  const Vec n = rms_norm(x, w[in_layer(layer, "post_attention_layernorm")], m.rms_eps);
  const Vec gate = w.times(in_layer(layer, "mlp.gate_proj"), n), up = w.times(in_layer(layer, "mlp.up_proj"), n);
  Vec hidden(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) hidden[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
  add_to(x, w.times(in_layer(layer, "mlp.down_proj"), hidden));
}

Vec lm_head(const ModelConfig& m, const Tensors& w, const Vec& x) {
  return w.times("lm_head.weight", rms_norm(x, w["model.norm.weight"], m.rms_eps));
}

// Rotary embedding as complex multiplication: the pair (x_i, x_{i + D/2}) of each head is the
// complex number x_i + i x_{i + D/2}, turned by e^{i position / theta^(2i/D)}.
Vec rotate(const ModelConfig& m, Vec x, int position) {
  const int d = m.head_dim, half = d / 2;
  for (std::size_t head = 0; head < x.size() / static_cast<std::size_t>(d); ++head) {
    for (int i = 0; i < half; ++i) {
      double& re = x[head * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)];
      double& im = x[head * static_cast<std::size_t>(d) + static_cast<std::size_t>(i + half)];
      const std::complex<double> turned =
          std::complex<double>(re, im) * std::polar(1.0, position / std::pow(m.rope_theta, 2.0 * i / d));
      re = turned.real();
      im = turned.imag();
    }
  }
  return x;
}

// The whole forward pass in loops, one position and one head at a time: [tokens, V].
Eigen::MatrixXd loop_logits(const ModelConfig& m, const Tensors& w, const std::vector<int>& tokens, int offset) {
  const std::size_t count = tokens.size(), d = static_cast<std::size_t>(m.head_dim);
  const int group = m.q_heads / m.kv_heads;
  std::vector<Vec> x;  // [T][H]
  for (int token : tokens) x.push_back(embedding(m, w, token));
  for (int l = 0; l < m.layers; ++l) {
    std::vector<Vec> q(count), k(count), v(count);  // [T][Hq D], [T][Hkv D], [T][Hkv D]
    for (std::size_t t = 0; t < count; ++t) {
      const Vec n = rms_norm(x[t], w[in_layer(l, "input_layernorm")], m.rms_eps);
      const int position = offset + static_cast<int>(t);
      q[t] = rotate(m, w.times(in_layer(l, "self_attn.q_proj"), n), position);
      k[t] = rotate(m, w.times(in_layer(l, "self_attn.k_proj"), n), position);
      v[t] = w.times(in_layer(l, "self_attn.v_proj"), n);
    }
    for (std::size_t t = 0; t < count; ++t) {
      Vec heads(static_cast<std::size_t>(m.q_heads) * d, 0.0);  // [Hq D]
      for (int h = 0; h < m.q_heads; ++h) {
        const std::size_t qh = static_cast<std::size_t>(h) * d, kvh = static_cast<std::size_t>(h / group) * d;
        Vec p(t + 1);  // softmax over the keys 0..t
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t s = 0; s <= t; ++s) {
          p[s] = 0;
          for (std::size_t i = 0; i < d; ++i) p[s] += q[t][qh + i] * k[s][kvh + i];
          p[s] /= std::sqrt(static_cast<double>(d));
          top = std::max(top, p[s]);
        }
        for (double& e : p) sum += (e = std::exp(e - top));
        for (std::size_t s = 0; s <= t; ++s) {
          for (std::size_t i = 0; i < d; ++i) heads[qh + i] += p[s] / sum * v[s][kvh + i];
        }
      }
      add_to(x[t], w.times(in_layer(l, "self_attn.o_proj"), heads));
    }
    for (Vec& row : x) add_mlp(m, w, l, row);
  }
  Eigen::MatrixXd logits(static_cast<Eigen::Index>(count), m.vocab);  // [T, V]
  for (std::size_t t = 0; t < count; ++t) {
    const Vec row = lm_head(m, w, x[t]);
    logits.row(static_cast<Eigen::Index>(t)) = Eigen::Map<const Eigen::RowVectorXd>(row.data(), m.vocab);
  }
  return logits;
}

double max_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  return (a - b).cwiseAbs().maxCoeff();
}

// Another source's tensors, edited: its load is `load`.
class EditedWeights final : public WeightSource {
 public:
  using Load = std::function<std::vector<float>(const TensorSpec&, const ModelShard&, int)>;
  explicit EditedWeights(Load load) : load_(std::move(load)) {}
  std::string describe() const override { return "edited weights"; }
  DType dtype() const override { return DType::bf16; }
  std::vector<float> load(const TensorSpec& spec, const ModelShard& s, int rank) const override {
    return load_(spec, s, rank);
  }

 private:
  Load load_;
};

class Forward64Test : public ::testing::Test {
 protected:
  const ModelConfig model = model_config("smoke");  // 2 layers, H 64, Hq 4, Hkv 2, D 16, F 160, V 97
  const std::unique_ptr<WeightSource> weights = random_weights(7);
  const Forward64 forward{model, *weights};
  const std::vector<int> tokens = {3, 17, 17, 96, 0, 41, 58};
};

TEST_F(Forward64Test, OneTokenIsItsValueThroughTheOutputProjection) {
  // Attention over a single key returns its value whatever the scores, so each layer adds
  // Wo (V head h / g for query head h) and neither the queries, the keys nor RoPE matter.
  const Tensors w(model, *weights);
  const std::ptrdiff_t d = model.head_dim;
  const int group = model.q_heads / model.kv_heads;
  for (int token : {0, 42, 96}) {
    Vec x = embedding(model, w, token);
    for (int l = 0; l < model.layers; ++l) {
      const Vec n = rms_norm(x, w[in_layer(l, "input_layernorm")], model.rms_eps);
      const Vec v = w.times(in_layer(l, "self_attn.v_proj"), n);  // [Hkv D]
      Vec heads;  // [Hq D]
      for (int h = 0; h < model.q_heads; ++h) {
        const auto first = v.begin() + h / group * d;
        heads.insert(heads.end(), first, first + d);
      }
      add_to(x, w.times(in_layer(l, "self_attn.o_proj"), heads));
      add_mlp(model, w, l, x);
    }
    const Vec want = lm_head(model, w, x);
    for (int offset : {0, 9}) {
      const Eigen::MatrixXd got = forward.logits({token}, offset);
      ASSERT_EQ(got.rows(), 1);
      ASSERT_EQ(got.cols(), model.vocab);
      for (int i = 0; i < model.vocab; ++i) {
        EXPECT_NEAR(got(0, i), want[static_cast<std::size_t>(i)], 1e-12) << "token " << token << ", logit " << i;
      }
    }
  }
}

TEST_F(Forward64Test, EveryPositionMatchesTheLoopsWithRotateHalfRope) {
  // The loops pair element i with i + D/2 (not 2i with 2i + 1) and turn it by position / theta^(2i/D).
  const Tensors w(model, *weights);
  for (int offset : {0, 5}) {
    EXPECT_LE(max_difference(forward.logits(tokens, offset), loop_logits(model, w, tokens, offset)), 1e-12)
        << "position_offset " << offset;
  }
}

TEST_F(Forward64Test, IsCausal) {
  const Eigen::MatrixXd all = forward.logits(tokens);
  std::vector<int> changed = tokens;
  changed[4] = 1;
  changed[6] = 2;
  const Eigen::MatrixXd other = forward.logits(changed);
  EXPECT_LE(max_difference(other.topRows(4), all.topRows(4)), 1e-12);
  EXPECT_GT(max_difference(other.bottomRows(3), all.bottomRows(3)), 1e-3);  // the change is visible where it may be
  const std::vector<int> head(tokens.begin(), tokens.begin() + 4);
  EXPECT_LE(max_difference(forward.logits(head), all.topRows(4)), 1e-12);
}

TEST_F(Forward64Test, DependsOnlyOnRelativePositions) {
  // q_t . k_s after RoPE depends on t - s alone, so shifting every position changes nothing.
  const Eigen::MatrixXd base = forward.logits(tokens);
  for (int offset : {1, 1000, 4000}) {
    EXPECT_LE(max_difference(forward.logits(tokens, offset), base), 1e-9) << "position_offset " << offset;
  }
}

TEST_F(Forward64Test, QueryHeadHReadsKvHeadHOverG) {
  // The same model as multi-head attention, its KV head h a copy of the GQA model's KV head
  // kv_of(h) (Hugging Face's repeat_kv for h / g), must give the same logits.
  ModelConfig mha = model;
  mha.name = "smoke-mha";
  mha.kv_heads = model.q_heads;
  auto repeated = [&](std::function<int(int)> kv_of) {
    return EditedWeights([this, kv_of](const TensorSpec& spec, const ModelShard& s, int rank) {
      if (spec.role != Role::k && spec.role != Role::v) return weights->load(spec, s, rank);
      TensorSpec gqa = spec;
      gqa.rows = static_cast<std::int64_t>(model.kv_heads) * model.head_dim;
      const std::vector<float> heads = weights->load(gqa, shard(model, 1), 0);  // [Hkv D, H]
      const auto head_size = static_cast<std::ptrdiff_t>(model.head_dim * spec.cols);
      std::vector<float> out;  // [Hq D, H]
      for (int h = 0; h < model.q_heads; ++h) {
        const auto first = heads.begin() + kv_of(h) * head_size;
        out.insert(out.end(), first, first + head_size);
      }
      return out;
    });
  };
  const int group = model.q_heads / model.kv_heads;
  const Eigen::MatrixXd want = forward.logits(tokens);
  EXPECT_LE(max_difference(Forward64(mha, repeated([&](int h) { return h / group; })).logits(tokens), want), 1e-12);
  // The test tells the mappings apart: interleaved heads give other logits.
  EXPECT_GT(max_difference(Forward64(mha, repeated([&](int h) { return h % model.kv_heads; })).logits(tokens), want),
            1e-3);
}

TEST_F(Forward64Test, GreedyTakesTheArgmaxOfTheLastPosition) {
  const std::vector<int> prompt = {5, 60, 7};
  const std::vector<int> generated = forward.greedy(prompt, 6);
  ASSERT_EQ(generated.size(), 6u);
  EXPECT_EQ(forward.greedy(prompt, 6), generated);
  EXPECT_EQ(Forward64(model, *weights).greedy(prompt, 6), generated);
  Eigen::Index first = -1;
  forward.logits(prompt).bottomRows(1).row(0).maxCoeff(&first);
  EXPECT_EQ(generated[0], first);
  // Each token extends the sequence the next one is decoded from.
  std::vector<int> longer = prompt;
  longer.insert(longer.end(), generated.begin(), generated.begin() + 3);
  const std::vector<int> rest = forward.greedy(longer, 3);
  EXPECT_EQ(rest, std::vector<int>(generated.begin() + 3, generated.end()));
  EXPECT_TRUE(forward.greedy(prompt, 0).empty());
}

// A dropped key changes the last position alone (the earlier ones never attend it from there).
TEST_F(Forward64Test, ADroppedKeyLeavesTheLastTokensAttentionAlone) {
  const std::vector<int> four = {5, 17, 40, 3};
  const Eigen::MatrixXd whole = forward.logits(four), dropped = forward.logits(four, 0, 1);
  EXPECT_EQ(dropped.topRows(3), whole.topRows(3));
  EXPECT_GT((dropped.row(3) - whole.row(3)).cwiseAbs().maxCoeff(), 1e-3 * whole.row(3).cwiseAbs().maxCoeff());
}

TEST_F(Forward64Test, RefusesBadInput) {
  EXPECT_THAT([&] { forward.logits({1, 2, 97}); },
              ThrowsMessage<std::invalid_argument>(
                  AllOf(HasSubstr("token 97 at index 2"), HasSubstr("vocabulary [0, 97) of smoke"))));
  EXPECT_THAT([&] { forward.logits({-1}); }, ThrowsMessage<std::invalid_argument>(HasSubstr("token -1 at index 0")));
  EXPECT_THAT([&] { forward.logits({1}, -1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("position_offset must be at least 0, got -1")));
  EXPECT_THAT([&] { forward.logits({1, 2, 3}, 0, 2); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("dropped_key 2 is not a key before the last of 3 tokens")));
  EXPECT_THAT([&] { forward.greedy({}, 1); }, ThrowsMessage<std::invalid_argument>(HasSubstr("non-empty prompt")));
  EXPECT_THAT([&] { forward.greedy({1}, -2); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("steps must be at least 0, got -2")));
}

TEST_F(Forward64Test, RefusesATensorOfTheWrongSize) {
  const EditedWeights short_up([this](const TensorSpec& spec, const ModelShard& s, int rank) {
    std::vector<float> values = weights->load(spec, s, rank);
    if (spec.name == "model.layers.1.mlp.up_proj.weight") values.pop_back();
    return values;
  });
  EXPECT_THAT([&] { Forward64(model, short_up); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("model.layers.1.mlp.up_proj.weight has 10239 values, expected 160 x 64")));
}

}  // namespace
}  // namespace hydragen::decode
