#pragma once
// hydragen-decode's decoder: a Llama-architecture model (one tensor-parallel shard of it) over a
// batch of sequences that share a prompt, its attention through the backend interface. The layer
// is written once, in the operations of a Runtime (host fp32 or CUDA bf16).
//
// The KV cache of each layer holds the shared prompt once (modes paged and hydragen: segment 0 of a
// prefix_suffix tree, every sequence's leaf after it) or once per sequence (mode flash: a flat tree,
// each leaf prompt then suffix, the paper's FlashAttention baseline). Leaves are allocated for the
// whole run; the attention plan is made for leaves of a bucket's capacity (a multiple of `bucket`
// tokens) and runs with the current lengths in device memory (AttentionInputs::leaf_lengths), so a
// step is planned, and captured as a CUDA graph, once per bucket, not per token. A bucket's plan and
// graph live as long as the decoder (reset() keeps them), and prepare() makes them ahead of a run, as
// serving systems capture their graphs at start-up.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "decode/communicator.hpp"
#include "decode/model_config.hpp"
#include "decode/runtime.hpp"
#include "decode/shard_weights.hpp"
#include "decode/weights.hpp"
#include "hydragen/attention.hpp"
#include "hydragen/problem.hpp"

namespace hydragen::decode {

enum class Mode { flash, paged, hydragen, no_attention };
std::string_view mode_name(Mode mode);  // "flash", "paged", "hydragen", "no-attention"
Mode parse_mode(std::string_view text);  // throws std::invalid_argument listing the modes

struct DecoderOptions {
  Mode mode = Mode::hydragen;
  std::string backend;     // "name[:option=value...]"; empty: the fastest of the runtime's kind (attention_backend)
  int batch = 1;           // B sequences
  int prompt_len = 0;      // P: the shared prompt's tokens
  int suffix_capacity = 0; // tokens each sequence adds after the prompt (its question and its answer)
  int bucket = 16;         // leaf capacity granularity of the attention plans
  int max_q_len = 1;       // most tokens per sequence in one step (a question entering at once)
  int rank = 0;            // which shard of the tensor-parallel model this is
  // With tp > 1: the collectives with the other ranks (communicator.hpp; its rank is `rank`), or null
  // to run this shard alone (its timing with the all-reduces left out; the tokens are not the model's).
  Communicator* comm = nullptr;
  // Sharing below the prompt (the paper's Fig. 6: a problem's description shared by its samples):
  // group g's group_lens[g] tokens follow the prompt for its sequences, ahead of their own suffixes
  // (prefill_groups). Empty: the prompt alone. Not in mode flash.
  std::vector<int> group_lens;
  // [B] each sequence's group, or -1 for none (the prompt, then its suffix); empty: G equal runs of
  // consecutive sequences, B / G each.
  std::vector<int> seq_group;
  bool copy_groups = false;  // each group's KV copied into its sequences' leaves: the prompt alone shared
};

// The attention backend the options run: none in mode no-attention, the one named, or else the
// fastest of the runtime's kind for the mode (cuda-hydragen or cuda-flash; cpu-hydragen or cpu-flat).
std::string attention_backend(const DecoderOptions& options, const Runtime& runtime);

// What the decoder holds on the device, by part (the memory estimate made before anything is
// allocated).
struct MemoryEstimate {
  std::size_t weights = 0, kv_cache = 0, activations = 0, attention = 0;
  std::size_t total() const { return weights + kv_cache + activations + attention; }
};
MemoryEstimate estimate_memory(const ModelShard& shard, const DecoderOptions& options, const Runtime& runtime);

// Throws std::invalid_argument (naming the field, or the backend's reason) for options a Decoder of
// `shard` on `runtime` would refuse: what a caller checks before making the shard's weights, which
// takes seconds for a large model.
void check_decoder_options(const Runtime& runtime, const ModelShard& shard, const DecoderOptions& options);

class Decoder {
 public:
  // Validates the options (std::invalid_argument naming the field), uploads the shard's weights
  // from `weights` and allocates the cache for prompt_len + suffix_capacity tokens per sequence.
  Decoder(Runtime& runtime, const ModelShard& shard, const WeightSource& weights, const DecoderOptions& options);
  // The same on weights uploaded already, shared with other decoders; they must be rank
  // options.rank of `shard` in `runtime` (std::invalid_argument naming both otherwise).
  Decoder(Runtime& runtime, const ModelShard& shard, std::shared_ptr<const ShardWeights> weights, const DecoderOptions& options);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // The shared prompt (prompt_len tokens) through the model, its KV into the cache: the prefill.
  // Returns the greedy next token after it (every sequence's, the prompt being theirs alike).
  int prefill(const std::vector<int>& prompt);
  // After prefill(), with group_lens: each group's tokens (group_lens[g] of them) through the model
  // after the prompt, one causal step per group, its KV into the group's segment (or, copy_groups,
  // into each of its sequences' leaves). Returns each group's greedy next token [G].
  std::vector<int> prefill_groups(const std::vector<std::vector<int>>& group_tokens);
  // q_len tokens of each sequence ([B, q_len], sequence-major) enter the cache through the model;
  // returns each sequence's greedy next token [B]. Eager (no graph): for a question's tokens.
  std::vector<int> step(const std::vector<int>& tokens, int q_len);
  // `steps` greedy decode steps from `first` [B]: each step's tokens are the previous step's
  // argmax, on the device. Steps run as CUDA graph replays, one graph per bucket. Returns the
  // generated tokens [steps, B] (the first step's input not included).
  std::vector<int> generate(const std::vector<int>& first, int steps);

  // Back to the state right after the prefill: the suffixes emptied, the prompt's KV kept (the
  // timing runs repeat the decode on one prefill). The buckets' plans and graphs stay.
  void reset();
  // Makes the plans of the steps of q_len tokens that bring each leaf to `first` ... `last` tokens
  // after the prompt; for q_len 1 (generate()'s steps) also binds them to every layer's cache and
  // captures the steps.
  void prepare(int q_len, int first, int last);
  // The attention of generate()'s next `steps` steps alone: each step's leaf advance and every
  // layer's cache append and attention, one graph per bucket, as generate() replays them, and no
  // other operation; waits. What it appends is scratch (whatever the activations hold): reset()
  // before the next generate(). What the step costs beside the rest of the model is step time minus
  // mode no-attention's; this is what the same kernels cost without it.
  void attend_alone(int steps);

  // The last step's logits [B, vocab rows of this shard], fp32 on the host (tests).
  std::vector<float> last_logits() const;
  int suffix_length() const { return suffix_len_; }  // tokens each sequence holds after the prompt
  const AttentionBackend* backend() const { return backend_; }  // null in mode no-attention
  // Seconds of host time spent making, binding and capturing plans so far, and enqueueing the last
  // generate()'s steps (those included, its final wait not).
  double replan_seconds() const { return replan_seconds_; }
  double generate_host_seconds() const { return generate_host_seconds_; }
  int plans_made() const { return plans_made_; }
  // The attention problem of a decode step now (its floor is the step's attention floor per layer).
  AttentionShape attention_shape(int q_len) const;
  SharingTree attention_tree(int capacity) const;

 private:
  struct Layer;
  struct Bucket;
  void enqueue_step(const Bucket& k, int position_offset);
  // One layer's attention in a step: its K and V rotated into the cache, then the plan's run.
  void enqueue_attention(const Bucket& k, std::size_t layer, int position_offset);
  int decode_position_offset() const;  // of generate()'s steps' leaves: 0 (flash) or the prompt's length
  AttentionOutputs attention_outputs(std::int64_t tokens) const;  // O and LSE of a step of `tokens`
  // x += a w^T summed over the ranks (a row-parallel projection: O, down); a w^T alone without comm.
  void row_parallel(const Matrix& a, const Matrix& w, const Matrix& x);
  // The bucket of a step of q_len tokens after which each leaf holds `needed` suffix tokens, made on
  // first use.
  Bucket& bucket_for(int q_len, int needed);
  // Runs the bucket's attention once per layer (a plan's first run with a cache uploads its tables),
  // then, for q_len 1, captures its step.
  StepGraph* bind(Bucket& k, bool capture);
  void upload_tokens(const std::vector<int>& tokens);
  std::vector<int> download_tokens(const void* src, int count) const;

  Runtime& rt_;
  ModelShard shard_;
  DecoderOptions options_;
  const AttentionBackend* backend_ = nullptr;
  PlanOptions plan_options_;
  std::shared_ptr<const ShardWeights> weights_;
  std::vector<Layer> layers_;  // [layers] each layer's KV cache
  // Activations, [T, width] for T up to max(B * max_q_len, P) tokens.
  Buffer tokens_, x_, h_, qkv_, q_, o_, lse_, gate_up_, act_, logits_, last_h_;
  Buffer argmax_keys_;     // [B] ArgmaxKey: each sequence's best logit and token, across ranks (with comm)
  Buffer leaf_length_;     // [B] int: tokens in each leaf (device memory)
  Buffer prompt_length_;   // [1] int: the prompt's length, the prefill's leaf length
  Buffer group_length_;    // [G] int: tokens prefilled into each group's segment
  Buffer seq_offset_;      // [B] int: the tokens of each sequence's group (shared groups), its positions' offset
  Buffer rotary_table_;    // [positions][2][D / 2] fp32: rope_append's turns (rotary.hpp)
  Rotary rotary_;          // over rotary_table_: every position the decoder makes (none in mode no-attention)
  std::vector<int> seq_group_;  // [B] each sequence's group or -1 (DecoderOptions::seq_group, filled in)
  // Every bucket made, kept: freeing a plan's memory (cudaFree) mid-run would wait for every queued
  // step, leaving the GPU idle while the next plan is made.
  std::vector<std::unique_ptr<Bucket>> buckets_;
  int suffix_len_ = 0;
  int logits_rows_ = 0;  // rows the last step wrote: 1 after the prefill, B after a step
  bool prefilled_ = false;
  bool groups_prefilled_ = false;
  double replan_seconds_ = 0;
  double generate_host_seconds_ = 0;
  int plans_made_ = 0;
};

}  // namespace hydragen::decode
