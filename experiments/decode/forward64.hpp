#pragma once
// The fp64 forward pass of a Llama-architecture model: the definition the decoders (host fp32, CUDA
// bf16) are checked against. One sequence, every position, in plain Eigen; written to be read, not
// to be fast.
#include <Eigen/Core>

#include <vector>

#include "decode/model_config.hpp"
#include "decode/weights.hpp"

namespace hydragen::decode {

class Forward64 {
 public:
  // Loads every tensor of the whole model (tp = 1) from `weights`, in fp64. Throws
  // std::runtime_error naming a tensor whose values are not the size its spec says.
  Forward64(const ModelConfig& model, const WeightSource& weights);

  // The logits of every position of one sequence, [tokens, V]. Token t sits at rotary position
  // position_offset + t: a suffix that follows a prefix of P tokens has position_offset = P.
  // With dropped_key >= 0, the last token's attention skips that token's key in every layer and head:
  // what a decoder whose step lost one key of this sequence computes (the tests' proof that their
  // bound sees one token, issue 42). Throws std::invalid_argument for a token outside [0, V), naming
  // it and its index, a negative position_offset, or a dropped_key that is not before the last token.
  Eigen::MatrixXd logits(const std::vector<int>& tokens, int position_offset = 0, int dropped_key = -1) const;

  // The `steps` tokens greedy decoding appends to `prompt` (argmax, the lowest index on ties), each
  // from logits() of the whole sequence so far: quadratic, for tiny models. Throws
  // std::invalid_argument for an empty prompt or negative steps.
  std::vector<int> greedy(const std::vector<int>& prompt, int steps) const;

 private:
  struct Layer {
    Eigen::RowVectorXd attn_norm;  // [H]
    Eigen::MatrixXd q;             // [Hq D, H]
    Eigen::MatrixXd k, v;          // [Hkv D, H]
    Eigen::MatrixXd o;             // [H, Hq D]
    Eigen::RowVectorXd mlp_norm;   // [H]
    Eigen::MatrixXd gate, up;      // [F, H]
    Eigen::MatrixXd down;          // [H, F]
  };

  Eigen::MatrixXd attention(const Layer& layer, const Eigen::MatrixXd& n, int position_offset, int dropped_key) const;
  Eigen::MatrixXd mlp(const Layer& layer, const Eigen::MatrixXd& n) const;

  ModelConfig model_;
  Eigen::MatrixXd embed_;          // [V, H]
  std::vector<Layer> layers_;      // [layers]
  Eigen::RowVectorXd final_norm_;  // [H]
  Eigen::MatrixXd lm_head_;        // [V, H]
};

}  // namespace hydragen::decode
