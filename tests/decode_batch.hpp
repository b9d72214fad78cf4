#pragma once
// The decoder tests' batch (test_decoder, test_tensor_parallel): the smoke model with seeded random
// weights, a shared prompt, each sequence's question, and the decode that follows it.
#include <memory>
#include <random>
#include <vector>

#include "decode/decoder.hpp"
#include "decode/host_runtime.hpp"
#include "decode_options.hpp"

namespace hydragen::decode {

constexpr int kBatch = 3, kPrompt = 20, kQuestion = 4, kGen = 64;

struct Batch {
  ModelConfig model = model_config("smoke");
  std::unique_ptr<WeightSource> weights = random_weights(5);
  std::unique_ptr<Runtime> runtime = host_runtime();
  std::vector<int> prompt, questions;  // [P], [B, question]

  Batch() {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> token(0, model.vocab - 1);
    for (int i = 0; i < kPrompt; ++i) prompt.push_back(token(rng));
    for (int i = 0; i < kBatch * kQuestion; ++i) questions.push_back(token(rng));
  }

  DecoderOptions options(Mode mode, int bucket = 16) const {
    DecoderOptions o = question_options(mode, kBatch, kPrompt, kQuestion, kGen);
    o.bucket = bucket;
    return o;
  }

  // Sequence s's tokens: the prompt, its question, then what it generated.
  std::vector<int> sequence(int s, const std::vector<int>& generated, int steps) const {
    std::vector<int> t = prompt;
    t.insert(t.end(), questions.begin() + s * kQuestion, questions.begin() + (s + 1) * kQuestion);
    for (int i = 0; i < steps; ++i) t.push_back(generated[static_cast<std::size_t>(i * kBatch + s)]);
    return t;
  }
};

// The question, then generate(): the tokens [kGen, B] (the question step's argmax first).
inline std::vector<int> decode(const Batch& setup, Decoder& d) {
  d.prefill(setup.prompt);
  const std::vector<int> first = d.step(setup.questions, kQuestion);
  std::vector<int> tokens = first;
  const std::vector<int> rest = d.generate(first, kGen - 1);
  tokens.insert(tokens.end(), rest.begin(), rest.end());
  return tokens;
}

}  // namespace hydragen::decode
