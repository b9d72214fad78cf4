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

PromptSharing share_prompts(const std::vector<std::vector<int>>& prompts, const AttentionShape& decode,
                            const SharingRates& rates, bool groups) {
  PromptSharing out;
  const int batch = static_cast<int>(prompts.size());
  out.seq_group.assign(static_cast<std::size_t>(batch), -1);
  out.rates = rates;
  const DetectedSharing found = detect_sharing(prompts, decode, rates);
  const SharingTree& tree = found.tree;
  const auto tokens = [&](int segment) {
    const DetectedSharing::Span& span = found.spans[static_cast<std::size_t>(segment)];
    const std::vector<int>& source = prompts[static_cast<std::size_t>(span.seq)];
    return std::vector<int>(source.begin() + span.begin, source.begin() + span.end);
  };
  // One root shared by all: the prompt. Otherwise nothing was worth sharing by the cost model's
  // rule, and the prompts' common prefix, however short, is the prompt (as without detection).
  const int root = tree.path(0).front();
  bool one_root = true;
  for (int s = 0; s < batch; ++s) one_root = one_root && tree.path(s).front() == root && tree.path(s).size() >= 2;
  if (!one_root || batch == 1) {
    out.prompt = common_prefix(prompts);
  } else {
    out.prompt = tokens(root);
  }
  std::vector<int> group_of_segment(static_cast<std::size_t>(tree.num_segments()), -1);
  for (int s = 0; s < batch; ++s) {
    const std::vector<int>& path = tree.path(s);
    std::size_t used = out.prompt.size();  // tokens of the sequence the prompt and its group hold
    // The first shared segment below the prompt is the sequence's group; deeper sharing is not taken
    // (those tokens go into each rest: the decoder shares two levels).
    if (groups && one_root && batch > 1 && path.size() >= 3) {
      const int segment = path[1];
      int& group = group_of_segment[static_cast<std::size_t>(segment)];
      if (group < 0) {
        group = static_cast<int>(out.groups.size());
        out.groups.push_back(tokens(segment));
      }
      out.seq_group[static_cast<std::size_t>(s)] = group;
      used += out.groups[static_cast<std::size_t>(group)].size();
    }
    const std::vector<int>& p = prompts[static_cast<std::size_t>(s)];
    out.rests.emplace_back(p.begin() + static_cast<std::ptrdiff_t>(used), p.end());
  }
  return out;
}

PromptSharing share_prompts(const std::vector<std::vector<int>>& prompts, const ModelShard& shard, const Runtime& runtime,
                            Mode mode) {
  const AttentionShape decode =
      make_shape(static_cast<int>(prompts.size()), 1, shard.q_heads, shard.kv_heads, shard.model.head_dim, runtime.dtype());
  return share_prompts(prompts, decode, runtime.memory().sharing_rates(), mode != Mode::flash);
}

std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const std::vector<std::vector<int>>& prompts,
                                             int gen_tokens) {
  return answer_prompts(runtime, shard, weights, options, share_prompts(prompts, shard, runtime, options.mode), gen_tokens);
}

std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const PromptSharing& sharing, int gen_tokens) {
  if (gen_tokens < 1) throw std::invalid_argument("--gen-tokens must be at least 1");
  const int batch = static_cast<int>(sharing.rests.size());
  if (sharing.prompt.empty()) throw std::invalid_argument("the prompts share no first token: there is no prefix to share");
  int longest = 0;  // the longest rest after the prompt and the group
  for (const auto& rest : sharing.rests) longest = std::max(longest, static_cast<int>(rest.size()));
  options.batch = batch;
  options.prompt_len = static_cast<int>(sharing.prompt.size());
  options.suffix_capacity = longest + gen_tokens;
  options.max_q_len = 1;
  for (const auto& g : sharing.groups) options.group_lens.push_back(static_cast<int>(g.size()));
  if (!sharing.groups.empty()) options.seq_group = sharing.seq_group;
  Decoder decoder(runtime, shard, weights, options);
  const int first = decoder.prefill(sharing.prompt);
  const std::vector<int> after_groups = sharing.groups.empty() ? std::vector<int>{} : decoder.prefill_groups(sharing.groups);
  // Step j feeds sequence s its rest's token j while it has one, else its own last answer token; the
  // step's output after the rest's last token is its first answer token.
  std::vector<std::vector<int>> answers(static_cast<std::size_t>(batch));
  std::vector<int> input(static_cast<std::size_t>(batch));
  for (int s = 0; s < batch; ++s) {
    const int group = sharing.seq_group[static_cast<std::size_t>(s)];
    if (sharing.rests[static_cast<std::size_t>(s)].empty()) {  // no rest: the prefill answers
      answers[static_cast<std::size_t>(s)].push_back(group < 0 ? first : after_groups[static_cast<std::size_t>(group)]);
    }
  }
  for (int j = 0;; ++j) {
    bool done = true;
    for (int s = 0; s < batch; ++s) {
      const auto& rest = sharing.rests[static_cast<std::size_t>(s)];
      const auto& answer = answers[static_cast<std::size_t>(s)];
      input[static_cast<std::size_t>(s)] = j < static_cast<int>(rest.size()) ? rest[static_cast<std::size_t>(j)] : answer.back();
      done = done && static_cast<int>(answer.size()) >= gen_tokens;
    }
    if (done) break;
    const std::vector<int> out = decoder.step(input, 1);
    for (int s = 0; s < batch; ++s) {
      if (j >= static_cast<int>(sharing.rests[static_cast<std::size_t>(s)].size()) - 1) {
        answers[static_cast<std::size_t>(s)].push_back(out[static_cast<std::size_t>(s)]);
      }
    }
  }
  for (auto& a : answers) a.resize(static_cast<std::size_t>(gen_tokens));
  return answers;
}

}  // namespace hydragen::decode
