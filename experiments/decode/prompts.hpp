#pragma once
// hydragen-decode on a user's prompts (--prompts FILE): token ids in, token ids out, no tokenizer.
// The sequences' longest common prefix is the shared prompt; each one's rest (its question, of any
// length) enters one token a step, and each sequence then generates its own greedy answer.
#include <string>
#include <vector>

#include "decode/decoder.hpp"

namespace hydragen::decode {

// read_token_lists (hydragen/detect.hpp) with the model's vocabulary as the limit.
std::vector<std::vector<int>> read_prompts(const std::string& path, int vocab);

// The tokens every prompt starts with.
std::vector<int> common_prefix(const std::vector<std::vector<int>>& prompts);

// `gen_tokens` greedy tokens after each prompt: the common prefix prefilled once, each prompt's
// rest fed a token a step (a sequence whose rest is shorter starts answering earlier). options'
// batch, prompt_len, suffix_capacity and max_q_len are set from the prompts. Throws
// std::invalid_argument when the prompts share no token (there is no prefix to share).
std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const std::vector<std::vector<int>>& prompts,
                                             int gen_tokens);

}  // namespace hydragen::decode
