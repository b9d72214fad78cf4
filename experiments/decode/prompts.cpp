#include "decode/prompts.hpp"

#include "hydragen/detect.hpp"

#include <algorithm>
#include <stdexcept>

namespace hydragen::decode {

std::vector<std::vector<int>> read_prompts(const std::string& path, int vocab) { return read_token_lists(path, vocab); }

std::vector<int> common_prefix(const std::vector<std::vector<int>>& prompts) {
  std::vector<int> prefix = prompts.at(0);
  for (const auto& p : prompts) {
    const auto end = std::mismatch(prefix.begin(), prefix.end(), p.begin(), p.end()).first;
    prefix.erase(end, prefix.end());
  }
  return prefix;
}

std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const std::vector<std::vector<int>>& prompts,
                                             int gen_tokens) {
  if (gen_tokens < 1) throw std::invalid_argument("--gen-tokens must be at least 1");
  const std::vector<int> prefix = common_prefix(prompts);
  if (prefix.empty()) throw std::invalid_argument("the prompts share no first token: there is no prefix to share");
  const auto p = static_cast<int>(prefix.size());
  int longest = 0;  // the longest rest after the prefix
  for (const auto& prompt : prompts) longest = std::max(longest, static_cast<int>(prompt.size()) - p);
  const int batch = static_cast<int>(prompts.size());
  options.batch = batch;
  options.prompt_len = p;
  options.suffix_capacity = longest + gen_tokens;
  options.max_q_len = 1;
  Decoder decoder(runtime, shard, weights, options);
  const int first = decoder.prefill(prefix);
  // Step j feeds sequence s its rest's token j while it has one, else its own last answer token; the
  // step's output after the rest's last token is its first answer token.
  std::vector<std::vector<int>> answers(static_cast<std::size_t>(batch));
  std::vector<int> input(static_cast<std::size_t>(batch));
  for (int s = 0; s < batch; ++s) {
    const auto& prompt = prompts[static_cast<std::size_t>(s)];
    if (static_cast<int>(prompt.size()) == p) answers[static_cast<std::size_t>(s)].push_back(first);  // no rest: the prefill answers
  }
  for (int j = 0;; ++j) {
    bool done = true;
    for (int s = 0; s < batch; ++s) {
      const auto& prompt = prompts[static_cast<std::size_t>(s)];
      const auto& answer = answers[static_cast<std::size_t>(s)];
      const int rest = static_cast<int>(prompt.size()) - p;
      input[static_cast<std::size_t>(s)] = j < rest ? prompt[static_cast<std::size_t>(p + j)] : answer.back();
      done = done && static_cast<int>(answer.size()) >= gen_tokens;
    }
    if (done) break;
    const std::vector<int> out = decoder.step(input, 1);
    for (int s = 0; s < batch; ++s) {
      const int rest = static_cast<int>(prompts[static_cast<std::size_t>(s)].size()) - p;
      if (j >= rest - 1) answers[static_cast<std::size_t>(s)].push_back(out[static_cast<std::size_t>(s)]);
    }
  }
  for (auto& a : answers) a.resize(static_cast<std::size_t>(gen_tokens));
  return answers;
}

}  // namespace hydragen::decode
