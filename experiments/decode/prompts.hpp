#pragma once
// hydragen-decode on a user's prompts (--prompts FILE): token ids in, token ids out, no tokenizer.
// The prompt they all share and the groups below it come from detect_sharing (share_prompts); each
// one's rest (its question, of any length) enters one token a step, and each sequence then generates
// its own greedy answer.
#include <string>
#include <vector>

#include "decode/decoder.hpp"
#include "hydragen/sharing_rates.hpp"

namespace hydragen::decode {

// read_token_lists (hydragen/detect.hpp) with the model's vocabulary as the limit.
std::vector<std::vector<int>> read_prompts(const std::string& path, int vocab);

// The tokens every prompt starts with.
std::vector<int> common_prefix(const std::vector<std::vector<int>>& prompts);

// How the prompts are laid out for the decoder, from detect_sharing's tree (the cost model's rule
// for the decode step's shape at `rates`, kept for the report): its root is the prompt all share (when nothing is worth sharing,
// the prompts' common prefix, however short); with `groups`, the first shared segment below it on
// a sequence's path is that sequence's group; the rest of each prompt is its own. Sharing deeper
// than that is not taken: those tokens stay in the rests.
struct PromptSharing {
  std::vector<int> prompt;
  std::vector<std::vector<int>> groups;  // each group's tokens
  std::vector<int> seq_group;            // [B] the sequence's group, or -1
  std::vector<std::vector<int>> rests;   // [B] what follows the prompt and the group
  SharingRates rates;                    // what detection weighed the partials at, and where from
};
PromptSharing share_prompts(const std::vector<std::vector<int>>& prompts, const AttentionShape& decode,
                            const SharingRates& rates, bool groups);
// share_prompts for the decoder of `shard` in `mode` (groups except in mode flash, which copies
// whole paths) on `runtime`: its decode step's shape in the runtime's dtype, at the rates of the
// runtime's memory (DeviceMemory::sharing_rates).
PromptSharing share_prompts(const std::vector<std::vector<int>>& prompts, const ModelShard& shard, const Runtime& runtime,
                            Mode mode);

// `gen_tokens` greedy tokens after each prompt: share_prompts' prompt prefilled once, then its
// groups (not in mode flash, which copies whole paths), each prompt's rest fed a token a step (a
// sequence whose rest is shorter starts answering earlier). options' batch, prompt_len,
// suffix_capacity, max_q_len and groups are set from the prompts. Throws std::invalid_argument when
// the prompts share no token (there is no prefix to share).
std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const std::vector<std::vector<int>>& prompts,
                                             int gen_tokens);
// The same from the prompts' layout, share_prompts' for the same shard, runtime and mode.
std::vector<std::vector<int>> answer_prompts(Runtime& runtime, const ModelShard& shard, const WeightSource& weights,
                                             DecoderOptions options, const PromptSharing& sharing, int gen_tokens);

}  // namespace hydragen::decode
