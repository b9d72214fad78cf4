#include "decode/decoder.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "decode/rotary.hpp"
#include "hydragen/backends.hpp"

namespace hydragen::decode {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

std::int64_t elements(const TensorSpec& spec, const ModelShard& shard, int rank) {
  return shard_rows(spec, shard, rank) * std::max<std::int64_t>(1, shard_cols(spec, shard, rank));
}

Matrix matrix(const Buffer& b, const Runtime& rt, std::int64_t rows, std::int64_t cols) {
  return {b.data(), rt.dtype(), rows, cols, cols};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string_view mode_name(Mode mode) {
  switch (mode) {
    case Mode::flash: return "flash";
    case Mode::paged: return "paged";
    case Mode::hydragen: return "hydragen";
    case Mode::no_attention: return "no-attention";
  }
  return "?";
}

Mode parse_mode(std::string_view text) {
  for (Mode m : {Mode::flash, Mode::paged, Mode::hydragen, Mode::no_attention}) {
    if (text == mode_name(m)) return m;
  }
  throw std::invalid_argument("unknown mode '" + std::string(text) + "' (known: flash, paged, hydragen, no-attention)");
}

std::string attention_backend(const DecoderOptions& options, const Runtime& runtime) {
  if (options.mode == Mode::no_attention) return "";
  if (!options.backend.empty()) return options.backend;
  const bool gpu = runtime.memory().name() == "cuda";
  if (options.mode == Mode::hydragen) return gpu ? "cuda-hydragen" : "cpu-hydragen";
  return gpu ? "cuda-flash" : "cpu-flat";  // flash (a flat tree of full copies) and paged
}

// ---- geometry shared by the estimate and the decoder ------------------------------------------------

namespace {

struct Geometry {
  int layers, hidden, q_heads, kv_heads, head_dim, ffn, vocab_rows;
  std::int64_t max_tokens;  // T: the most tokens one step holds (the prefill's P, a group's, or B * max_q_len)
  std::int64_t leaf_stride; // tokens allocated per leaf
  int longest_group;        // tokens of the longest group (0 without groups)
  std::int64_t group_tokens;  // tokens of every group together
  std::int64_t kv_row() const { return static_cast<std::int64_t>(kv_heads) * head_dim; }
  std::int64_t qkv_cols() const { return static_cast<std::int64_t>(q_heads + 2 * kv_heads) * head_dim; }
};

Geometry geometry(const ModelShard& shard, const DecoderOptions& o) {
  const ModelConfig& m = shard.model;
  Geometry g{m.layers, m.hidden, shard.q_heads, shard.kv_heads, m.head_dim, shard.ffn, shard.vocab_rows, 0, 0, 0, 0};
  for (int len : o.group_lens) {
    g.longest_group = std::max(g.longest_group, len);
    g.group_tokens += len;
  }
  g.max_tokens = std::max<std::int64_t>({o.prompt_len, g.longest_group, static_cast<std::int64_t>(o.batch) * o.max_q_len});
  g.leaf_stride = o.suffix_capacity + (o.mode == Mode::flash ? o.prompt_len : 0) + (o.copy_groups ? g.longest_group : 0);
  return g;
}

// Positions the rotary table covers: a token's position is its index in the prompt, a group or a
// leaf (below the leaf's stride) plus at most the prompt and the longest group before it.
int rotary_positions(const DecoderOptions& o, const Geometry& g) {
  return static_cast<int>(o.prompt_len + g.longest_group + g.leaf_stride);
}

// Each sequence's group (-1: none): the options' seq_group, or equal runs of consecutive sequences.
std::vector<int> groups_of_seqs(const DecoderOptions& o) {
  if (!o.seq_group.empty() || o.group_lens.empty()) return o.seq_group;
  std::vector<int> out;
  const int per_group = o.batch / static_cast<int>(o.group_lens.size());
  for (int s = 0; s < o.batch; ++s) out.push_back(s / per_group);
  return out;
}

// The tree a decode step attends over, each leaf `capacity` tokens: a flat copy of every path
// (flash), the prompt then the leaves, or the prompt, the groups, then the leaves (segments in that
// order: 0, 1 + g, 1 + G + s).
SharingTree decode_tree(const DecoderOptions& o, int capacity) {
  const std::vector<int> leaves(static_cast<std::size_t>(o.batch), capacity);
  if (o.mode == Mode::flash) return SharingTree::flat(leaves);
  if (o.group_lens.empty() || o.copy_groups) return SharingTree::prefix_suffix(o.prompt_len, leaves);
  const auto groups = static_cast<int>(o.group_lens.size());
  std::vector<int> parents(1 + static_cast<std::size_t>(groups), 0), lengths{o.prompt_len}, seq_leaves;
  parents[0] = -1;
  lengths.insert(lengths.end(), o.group_lens.begin(), o.group_lens.end());
  const std::vector<int> group_of = groups_of_seqs(o);
  for (int s = 0; s < o.batch; ++s) {
    seq_leaves.push_back(static_cast<int>(parents.size()));
    parents.push_back(group_of[static_cast<std::size_t>(s)] < 0 ? 0 : 1 + group_of[static_cast<std::size_t>(s)]);
    lengths.push_back(capacity);
  }
  return SharingTree::from_parents(std::move(parents), std::move(lengths), std::move(seq_leaves));
}

void validate(const ModelShard& shard, const DecoderOptions& o) {
  require(o.batch >= 1, "--batch must be at least 1, got " + std::to_string(o.batch));
  require(o.prompt_len >= 1, "the prompt must hold at least one token, got " + std::to_string(o.prompt_len));
  require(o.suffix_capacity >= 1, "each sequence must have room for at least one token after the prompt");
  require(o.bucket >= 1, "the bucket must be at least 1 token, got " + std::to_string(o.bucket));
  require(o.max_q_len >= 1 && o.max_q_len <= o.suffix_capacity,
          "max_q_len must be in [1, suffix capacity " + std::to_string(o.suffix_capacity) + "], got " + std::to_string(o.max_q_len));
  require(o.rank >= 0 && o.rank < shard.tp, "rank " + std::to_string(o.rank) + " of a " + std::to_string(shard.tp) + "-way shard");
  if (o.comm != nullptr) {
    require(o.comm->size() == shard.tp && o.comm->rank() == o.rank,
            "the communicator is rank " + std::to_string(o.comm->rank()) + " of " + std::to_string(o.comm->size()) +
                ", the options rank " + std::to_string(o.rank) + " of a " + std::to_string(shard.tp) + "-way shard");
  }
  if (!o.group_lens.empty()) {
    const auto groups = static_cast<int>(o.group_lens.size());
    require(o.mode != Mode::flash, "groups below the prompt are not for mode flash (it copies every path whole)");
    if (o.seq_group.empty()) {
      require(o.batch % groups == 0,
              std::to_string(groups) + " groups need a batch that is a multiple of them, got " + std::to_string(o.batch));
    } else {
      require(static_cast<int>(o.seq_group.size()) == o.batch,
              "seq_group has " + std::to_string(o.seq_group.size()) + " entries for a batch of " + std::to_string(o.batch));
      for (int g : o.seq_group) require(g >= -1 && g < groups, "seq_group names group " + std::to_string(g) + " of " + std::to_string(groups));
    }
    for (int len : o.group_lens) require(len >= 1, "every group must hold at least one token, got " + std::to_string(len));
  }
  require(!o.copy_groups || !o.group_lens.empty(), "copy_groups copies groups: give group_lens");
  require(o.seq_group.empty() || !o.group_lens.empty(), "seq_group places sequences in groups: give group_lens");
  const long long positions = static_cast<long long>(o.prompt_len) + geometry(shard, o).longest_group + o.suffix_capacity;
  require(positions <= shard.model.max_positions, "prompt + group + suffix = " + std::to_string(positions) + " tokens, more than " +
                                                      shard.model.name + "'s " + std::to_string(shard.model.max_positions) +
                                                      " positions");
}

// A decode step of q_len tokens per sequence.
AttentionShape decode_shape(const ModelShard& shard, const DecoderOptions& o, DType dtype, int q_len) {
  return make_shape(o.batch, q_len, shard.q_heads, shard.kv_heads, shard.model.head_dim, dtype);
}

// The attention backend the options run (none in mode no-attention) and its plan options.
struct AttentionChoice {
  const AttentionBackend* backend = nullptr;
  PlanOptions options;
};

// Checks the options and that their backend runs in the runtime's memory and supports the decode
// (std::invalid_argument naming the field or the backend's reason).
AttentionChoice checked_attention(const ModelShard& shard, const DecoderOptions& o, const Runtime& rt) {
  validate(shard, o);
  if (o.mode == Mode::no_attention) return {};
  const BackendChoice choice = parse_backend_choice(attention_backend(o, rt));
  const AttentionBackend& b = backend(choice.backend);
  require(b.memory().name() == rt.memory().name(), "backend " + choice.backend + " works in " + std::string(b.memory().name()) +
                                                       " memory, the " + rt.name() + " runtime in " +
                                                       std::string(rt.memory().name()) + " memory");
  const Support support = b.supports(decode_shape(shard, o, rt.dtype(), o.max_q_len), decode_tree(o, o.max_q_len));
  require(support.ok, "backend " + choice.backend + " cannot run mode " + std::string(mode_name(o.mode)) + " of " +
                          shard.model.name + ": " + support.reason);
  return {&b, choice.options};
}

// The shard's weights made for one decoder, once its options are known good (a bad option is refused
// before the upload, which takes seconds for a large model).
std::shared_ptr<const ShardWeights> checked_weights(const Runtime& rt, const ModelShard& shard, const WeightSource& weights,
                                                    const DecoderOptions& o) {
  checked_attention(shard, o, rt);
  return std::make_shared<const ShardWeights>(rt, shard, weights, o.rank);
}

}  // namespace

void check_decoder_options(const Runtime& runtime, const ModelShard& shard, const DecoderOptions& options) {
  checked_attention(shard, options, runtime);
}

AttentionShape Decoder::attention_shape(int q_len) const { return decode_shape(shard_, options_, rt_.dtype(), q_len); }

SharingTree Decoder::attention_tree(int capacity) const { return decode_tree(options_, capacity); }

MemoryEstimate estimate_memory(const ModelShard& shard, const DecoderOptions& o, const Runtime& runtime) {
  validate(shard, o);
  const Geometry g = geometry(shard, o);
  const auto elem = static_cast<std::int64_t>(dtype_size(runtime.dtype()));
  MemoryEstimate e;
  for (const TensorSpec& spec : tensor_specs(shard.model)) e.weights += static_cast<std::size_t>(elements(spec, shard, o.rank) * elem);
  if (o.mode != Mode::no_attention) {
    const std::int64_t tokens = static_cast<std::int64_t>(o.batch) * g.leaf_stride + o.prompt_len + g.group_tokens;
    e.kv_cache = static_cast<std::size_t>(2 * g.layers * tokens * g.kv_row() * elem);
  }
  const std::int64_t widths = 2LL * g.hidden + g.qkv_cols() + 2LL * g.q_heads * g.head_dim + 3LL * g.ffn;
  e.activations = static_cast<std::size_t>(g.max_tokens * (widths * elem + g.q_heads * 4) +
                                           static_cast<std::int64_t>(o.batch) * (g.vocab_rows + g.hidden) * elem);
  if (o.mode != Mode::no_attention) {
    const BackendChoice choice = parse_backend_choice(attention_backend(o, runtime));
    const AttentionBackend& b = backend(choice.backend);
    const SharingTree tree = decode_tree(o, static_cast<int>(g.leaf_stride));
    const AttentionShape decode = make_shape(o.batch, o.max_q_len, g.q_heads, g.kv_heads, g.head_dim, runtime.dtype());
    const AttentionShape prefill = make_shape(1, o.prompt_len, g.q_heads, g.kv_heads, g.head_dim, runtime.dtype());
    // Each layer's binding adds its segment tables (and TMA descriptors) to a plan; a run keeps the
    // plans of all its buckets (the questions', then one per `bucket` tokens).
    const std::size_t bindings = static_cast<std::size_t>(g.layers) * static_cast<std::size_t>(tree.num_segments()) * 2 * (8 + 128);
    const auto buckets = static_cast<std::size_t>((o.suffix_capacity + o.bucket - 1) / o.bucket + 1);
    e.attention = buckets * (b.workspace_bytes(decode, tree, choice.options) + bindings) +
                  b.workspace_bytes(prefill, SharingTree::flat({o.prompt_len}), choice.options) +
                  static_cast<std::size_t>(rotary_positions(o, g)) * static_cast<std::size_t>(g.head_dim) * sizeof(float);
    if (g.longest_group > 0) {  // a group's prefill, one at a time
      const AttentionShape group = make_shape(1, g.longest_group, g.q_heads, g.kv_heads, g.head_dim, runtime.dtype());
      e.attention += b.workspace_bytes(group, SharingTree::prefix_suffix(o.prompt_len, {g.longest_group}), choice.options);
    }
  }
  return e;
}

// ---- the decoder ---------------------------------------------------------------------------------

struct Decoder::Layer {
  Buffer prompt_k, prompt_v;          // [P, Hkv, D]: the prompt's KV (flash: the prefill's, then copied into each leaf)
  Buffer leaf_k, leaf_v;              // [B, leaf_stride, Hkv, D]
  Buffer leaf_k_ptr, leaf_v_ptr;      // [B] pointers to each sequence's leaf (CacheWrite)
  Buffer prompt_k_ptr, prompt_v_ptr;  // [1] pointer to prompt_k / prompt_v (the prefill's CacheWrite)
  Buffer group_k, group_v;            // [sum of group_lens, Hkv, D]: the groups' KV, group by group
  Buffer group_k_ptr, group_v_ptr;    // [G] pointers to each group's KV (prefill_groups' CacheWrite)
};

// One step's attention: the plan, and per layer where the step's tokens go and what attention reads.
struct Decoder::Bucket {
  int seqs = 0, q_len = 0, capacity = 0;
  bool bound = false;          // its plan has run with every layer's cache
  int* leaf_length = nullptr;  // [seqs] in runtime memory
  std::unique_ptr<AttentionPlan> plan;
  std::vector<CacheWrite> cache;        // per layer
  std::vector<AttentionInputs> inputs;  // per layer
  std::unique_ptr<StepGraph> graph;     // the step, captured after its first run
  std::unique_ptr<StepGraph> attention_graph;  // its attention alone (attend_alone)
};

Decoder::Decoder(Runtime& runtime, const ModelShard& shard, const WeightSource& weights, const DecoderOptions& options)
    : Decoder(runtime, shard, checked_weights(runtime, shard, weights, options), options) {}

Decoder::Decoder(Runtime& runtime, const ModelShard& shard, std::shared_ptr<const ShardWeights> weights, const DecoderOptions& options)
    : rt_(runtime), shard_(shard), options_(options), weights_(std::move(weights)) {
  const AttentionChoice attention = checked_attention(shard_, options_, rt_);
  backend_ = attention.backend;
  plan_options_ = attention.options;
  require(weights_ != nullptr, "the decoder of " + shard_.model.name + " was given no weights (null)");
  const std::string mismatch = weights_->mismatch(rt_, shard_, options_.rank);
  require(mismatch.empty(), mismatch);
  const Geometry g = geometry(shard_, options_);
  layers_.resize(static_cast<std::size_t>(g.layers));
  const std::int64_t t = g.max_tokens, b = options_.batch;
  tokens_ = Buffer(rt_.memory(), static_cast<std::size_t>(t) * sizeof(int));
  x_ = rt_.zeros(t * g.hidden);
  h_ = rt_.zeros(t * g.hidden);
  qkv_ = rt_.zeros(t * g.qkv_cols());
  q_ = rt_.zeros(t * g.q_heads * g.head_dim);
  o_ = rt_.zeros(t * g.q_heads * g.head_dim);
  lse_ = Buffer(rt_.memory(), static_cast<std::size_t>(t * g.q_heads) * dtype_size(lse_dtype(rt_.dtype())));
  gate_up_ = rt_.zeros(t * 2 * g.ffn);
  act_ = rt_.zeros(t * g.ffn);
  last_h_ = rt_.zeros(b * g.hidden);
  logits_ = rt_.zeros(b * g.vocab_rows);
  if (options_.comm != nullptr) argmax_keys_ = Buffer(rt_.memory(), static_cast<std::size_t>(b) * sizeof(ArgmaxKey));
  leaf_length_ = Buffer(rt_.memory(), static_cast<std::size_t>(b) * sizeof(int));
  prompt_length_ = Buffer(rt_.memory(), sizeof(int));
  const auto groups = static_cast<std::int64_t>(options_.group_lens.size());
  seq_group_ = groups_of_seqs(options_);
  if (groups > 0) {
    group_length_ = Buffer(rt_.memory(), static_cast<std::size_t>(groups) * sizeof(int));
    if (!options_.copy_groups) {
      std::vector<int> offsets;
      for (int group : seq_group_) offsets.push_back(group < 0 ? 0 : options_.group_lens[static_cast<std::size_t>(group)]);
      seq_offset_ = Buffer(rt_.memory(), offsets.size() * sizeof(int));
      rt_.memory().copy_from_host(seq_offset_.data(), offsets.data(), seq_offset_.bytes());
    }
  }
  if (options_.mode == Mode::no_attention) return;
  const int positions = rotary_positions(options_, g);
  const std::vector<float> turns = rotary_table(shard_.model.rope_theta, g.head_dim, positions);
  rotary_table_ = Buffer(rt_.memory(), turns.size() * sizeof(float));
  rt_.memory().copy_from_host(rotary_table_.data(), turns.data(), rotary_table_.bytes());
  rotary_ = {static_cast<const float*>(rotary_table_.data()), positions, g.head_dim};
  const std::size_t elem = dtype_size(rt_.dtype());
  for (Layer& l : layers_) {
    // Zero-filled: the tail of a leaf past its length is read by the kernels and must be finite.
    l.prompt_k = rt_.zeros(static_cast<std::int64_t>(options_.prompt_len) * g.kv_row());
    l.prompt_v = rt_.zeros(static_cast<std::int64_t>(options_.prompt_len) * g.kv_row());
    l.leaf_k = rt_.zeros(b * g.leaf_stride * g.kv_row());
    l.leaf_v = rt_.zeros(b * g.leaf_stride * g.kv_row());
    // Tables of pointers into `base` at the given token offsets (rows of Hkv x D).
    auto pointers = [&](const Buffer& base, const std::vector<std::int64_t>& tokens) {
      std::vector<void*> p;
      for (std::int64_t at : tokens) p.push_back(static_cast<char*>(base.data()) + static_cast<std::size_t>(at * g.kv_row()) * elem);
      Buffer table(rt_.memory(), p.size() * sizeof(void*));
      rt_.memory().copy_from_host(table.data(), p.data(), table.bytes());
      return table;
    };
    std::vector<std::int64_t> leaf_starts, group_starts;
    for (std::int64_t s = 0; s < b; ++s) leaf_starts.push_back(s * g.leaf_stride);
    std::int64_t start = 0;
    for (int len : options_.group_lens) {
      group_starts.push_back(start);
      start += len;
    }
    l.leaf_k_ptr = pointers(l.leaf_k, leaf_starts);
    l.leaf_v_ptr = pointers(l.leaf_v, leaf_starts);
    l.prompt_k_ptr = pointers(l.prompt_k, {0});
    l.prompt_v_ptr = pointers(l.prompt_v, {0});
    if (groups > 0) {
      l.group_k = rt_.zeros(g.group_tokens * g.kv_row());
      l.group_v = rt_.zeros(g.group_tokens * g.kv_row());
      l.group_k_ptr = pointers(l.group_k, group_starts);
      l.group_v_ptr = pointers(l.group_v, group_starts);
    }
  }
}

Decoder::~Decoder() = default;

void Decoder::upload_tokens(const std::vector<int>& tokens) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    require(tokens[i] >= 0 && tokens[i] < shard_.model.vocab,
            "token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) + " is outside the vocabulary [0, " +
                std::to_string(shard_.model.vocab) + ")");
  }
  rt_.synchronize();  // the previous step may still read the tokens buffer
  rt_.memory().copy_from_host(tokens_.data(), tokens.data(), tokens.size() * sizeof(int));
}

std::vector<int> Decoder::download_tokens(const void* src, int count) const {
  rt_.synchronize();
  std::vector<int> out(static_cast<std::size_t>(count));
  rt_.memory().copy_to_host(out.data(), src, out.size() * sizeof(int));
  return out;
}

void Decoder::enqueue_step(const Bucket& k, int position_offset) {
  const int q_len = k.q_len;
  const ModelConfig& m = shard_.model;
  const Geometry g = geometry(shard_, options_);
  const std::int64_t t = static_cast<std::int64_t>(k.seqs) * q_len, hq_d = static_cast<std::int64_t>(g.q_heads) * g.head_dim;
  const auto eps = static_cast<float>(m.rms_eps);
  const Matrix x = matrix(x_, rt_, t, g.hidden), h = matrix(h_, rt_, t, g.hidden), qkv = matrix(qkv_, rt_, t, g.qkv_cols());
  const Matrix o = matrix(o_, rt_, t, hq_d);
  const Matrix gate_up = matrix(gate_up_, rt_, t, 2LL * g.ffn), act = matrix(act_, rt_, t, g.ffn);
  if (options_.mode != Mode::no_attention) rt_.advance(k.leaf_length, k.seqs, q_len);
  rt_.embed(static_cast<const int*>(tokens_.data()), matrix(weights_->embed, rt_, m.vocab, g.hidden), x);
  for (std::size_t i = 0; i < weights_->layers.size(); ++i) {
    const ShardWeights::Layer& l = weights_->layers[i];
    rt_.rms_norm(x, l.attn_norm.data(), eps, h);
    rt_.linear(h, matrix(l.wqkv, rt_, g.qkv_cols(), g.hidden), qkv, false);
    if (options_.mode != Mode::no_attention) enqueue_attention(k, i, position_offset);
    row_parallel(o, matrix(l.wo, rt_, g.hidden, hq_d), x);
    rt_.rms_norm(x, l.mlp_norm.data(), eps, h);
    rt_.linear(h, matrix(l.gate_up, rt_, 2LL * g.ffn, g.hidden), gate_up, false);
    rt_.swiglu(gate_up, act);
    row_parallel(act, matrix(l.down, rt_, g.hidden, g.ffn), x);
  }
  // Each sequence's last token goes on to the LM head.
  const Matrix last_h = matrix(last_h_, rt_, k.seqs, g.hidden);
  rt_.rms_norm(x.view(q_len - 1, k.seqs, q_len, 0, g.hidden), weights_->final_norm.data(), eps, last_h);
  const Matrix logits = matrix(logits_, rt_, k.seqs, g.vocab_rows);
  rt_.linear(last_h, matrix(weights_->lm_head, rt_, g.vocab_rows, g.hidden), logits, false);
  const std::int64_t valid = std::min<std::int64_t>(g.vocab_rows, m.vocab - static_cast<std::int64_t>(options_.rank) * g.vocab_rows);
  if (options_.comm != nullptr) {  // the vocabulary-parallel argmax: each rank's best as a key, the max across ranks
    auto* keys = static_cast<ArgmaxKey*>(argmax_keys_.data());
    rt_.argmax_keys(logits, valid, static_cast<std::int64_t>(options_.rank) * g.vocab_rows, keys);
    options_.comm->all_reduce_max(rt_, keys, k.seqs);
    rt_.tokens_of(keys, k.seqs, static_cast<int*>(tokens_.data()));
  } else {
    rt_.argmax(logits, valid, static_cast<int*>(tokens_.data()));
  }
}

void Decoder::enqueue_attention(const Bucket& k, std::size_t layer, int position_offset) {
  const Geometry g = geometry(shard_, options_);
  const std::int64_t t = static_cast<std::int64_t>(k.seqs) * k.q_len;
  CacheWrite cache = k.cache[layer];
  cache.position_offset = position_offset;
  rt_.rope_append(matrix(qkv_, rt_, t, g.qkv_cols()), g.q_heads, g.kv_heads, rotary_, cache,
                  matrix(q_, rt_, t, static_cast<std::int64_t>(g.q_heads) * g.head_dim));
  k.plan->run(k.inputs[layer], attention_outputs(t), rt_.stream());
}

int Decoder::decode_position_offset() const { return options_.mode == Mode::flash ? 0 : options_.prompt_len; }

AttentionOutputs Decoder::attention_outputs(std::int64_t tokens) const {
  const Geometry g = geometry(shard_, options_);
  return {{o_.data(), rt_.dtype(), static_cast<std::size_t>(tokens * g.q_heads * g.head_dim)},
          {lse_.data(), lse_dtype(rt_.dtype()), static_cast<std::size_t>(tokens * g.q_heads)}};
}

void Decoder::row_parallel(const Matrix& a, const Matrix& w, const Matrix& x) {
  if (options_.comm == nullptr) {
    rt_.linear(a, w, x, true);
    return;
  }
  // x + sum over ranks of a_r w_r^T: rank 0 adds its part to the residual, the others replace it by
  // theirs, and the all-reduce sums them.
  rt_.linear(a, w, x, options_.rank == 0);
  options_.comm->all_reduce_sum(rt_, x);
}

int Decoder::prefill(const std::vector<int>& prompt) {
  require(!prefilled_, "the prompt has been prefilled already");
  require(static_cast<int>(prompt.size()) == options_.prompt_len,
          "the prompt has " + std::to_string(prompt.size()) + " tokens, the decoder was made for " + std::to_string(options_.prompt_len));
  upload_tokens(prompt);
  const auto t0 = std::chrono::steady_clock::now();
  Bucket k;
  k.seqs = 1;
  k.q_len = options_.prompt_len;
  k.capacity = options_.prompt_len;
  k.leaf_length = static_cast<int*>(prompt_length_.data());
  const int zero = 0;
  rt_.memory().copy_from_host(prompt_length_.data(), &zero, sizeof(int));
  if (options_.mode != Mode::no_attention) {
    const AttentionShape shape = make_shape(1, k.q_len, shard_.q_heads, shard_.kv_heads, shard_.model.head_dim, rt_.dtype());
    const SharingTree tree = SharingTree::flat({options_.prompt_len});
    k.plan = backend_->plan(shape, tree, plan_options_);
    ++plans_made_;
    const std::size_t kv = static_cast<std::size_t>(options_.prompt_len) * shard_.kv_heads * shard_.model.head_dim;
    for (const Layer& l : layers_) {
      k.cache.push_back({static_cast<void* const*>(l.prompt_k_ptr.data()), static_cast<void* const*>(l.prompt_v_ptr.data()),
                         k.leaf_length, k.q_len, 0});
      k.inputs.push_back({{q_.data(), rt_.dtype(), kv / shard_.kv_heads * shard_.q_heads},
                          {{l.prompt_k.data(), rt_.dtype(), kv}},
                          {{l.prompt_v.data(), rt_.dtype(), kv}},
                          k.leaf_length});
    }
  }
  replan_seconds_ += seconds_since(t0);
  enqueue_step(k, 0);
  // Flash: every sequence gets its own copy of the prompt's KV at the start of its leaf.
  const Geometry g = geometry(shard_, options_);
  const std::size_t elem = dtype_size(rt_.dtype());
  if (options_.mode == Mode::flash) {
    const std::size_t prompt_bytes = static_cast<std::size_t>(options_.prompt_len * g.kv_row()) * elem;
    const std::size_t leaf_bytes = static_cast<std::size_t>(g.leaf_stride * g.kv_row()) * elem;
    for (Layer& l : layers_) {
      for (int s = 0; s < options_.batch; ++s) {
        rt_.copy(static_cast<char*>(l.leaf_k.data()) + s * leaf_bytes, l.prompt_k.data(), prompt_bytes);
        rt_.copy(static_cast<char*>(l.leaf_v.data()) + s * leaf_bytes, l.prompt_v.data(), prompt_bytes);
      }
    }
  }
  const int next = download_tokens(tokens_.data(), 1).front();
  logits_rows_ = 1;
  if (options_.mode == Mode::flash) {
    for (Layer& l : layers_) {  // copied into every leaf
      l.prompt_k = Buffer();
      l.prompt_v = Buffer();
    }
  }
  prefilled_ = true;
  reset();
  return next;
}

std::vector<int> Decoder::prefill_groups(const std::vector<std::vector<int>>& group_tokens) {
  const std::size_t groups = options_.group_lens.size();
  require(prefilled_, "prefill the prompt before its groups");
  require(groups > 0, "the decoder was made without groups (group_lens)");
  require(!groups_prefilled_, "the groups have been prefilled already");
  require(group_tokens.size() == groups,
          std::to_string(group_tokens.size()) + " groups of tokens for a decoder made for " + std::to_string(groups));
  const std::vector<int> zeros(groups, 0);
  rt_.memory().copy_from_host(group_length_.data(), zeros.data(), zeros.size() * sizeof(int));
  const Geometry g = geometry(shard_, options_);
  const std::size_t row = static_cast<std::size_t>(g.kv_row()), elem = dtype_size(rt_.dtype());
  std::vector<int> next;
  std::int64_t start = 0;  // the group's first token in group_k / group_v
  for (std::size_t i = 0; i < groups; ++i) {
    const int len = options_.group_lens[i];
    require(static_cast<int>(group_tokens[i].size()) == len, "group " + std::to_string(i) + " has " +
                                                                  std::to_string(group_tokens[i].size()) + " tokens, the decoder was made for " +
                                                                  std::to_string(len));
    upload_tokens(group_tokens[i]);
    const auto t0 = std::chrono::steady_clock::now();
    // One sequence of q_len = the group's tokens, causal, over the prompt and the group's own segment.
    Bucket k;
    k.seqs = 1;
    k.q_len = len;
    k.capacity = len;
    k.leaf_length = static_cast<int*>(group_length_.data()) + i;
    if (options_.mode != Mode::no_attention) {
      const AttentionShape shape = make_shape(1, len, shard_.q_heads, shard_.kv_heads, g.head_dim, rt_.dtype());
      k.plan = backend_->plan(shape, SharingTree::prefix_suffix(options_.prompt_len, {len}), plan_options_);
      ++plans_made_;
      const std::size_t at = static_cast<std::size_t>(start) * row * elem;
      const std::size_t queries = static_cast<std::size_t>(len) * shard_.q_heads * g.head_dim;
      for (const Layer& l : layers_) {
        k.cache.push_back({static_cast<void* const*>(l.group_k_ptr.data()) + i, static_cast<void* const*>(l.group_v_ptr.data()) + i,
                           k.leaf_length, len, 0});
        k.inputs.push_back({{q_.data(), rt_.dtype(), queries},
                            {{l.prompt_k.data(), rt_.dtype(), static_cast<std::size_t>(options_.prompt_len) * row},
                             {static_cast<const char*>(l.group_k.data()) + at, rt_.dtype(), static_cast<std::size_t>(len) * row}},
                            {{l.prompt_v.data(), rt_.dtype(), static_cast<std::size_t>(options_.prompt_len) * row},
                             {static_cast<const char*>(l.group_v.data()) + at, rt_.dtype(), static_cast<std::size_t>(len) * row}},
                            k.leaf_length});
      }
    }
    replan_seconds_ += seconds_since(t0);
    enqueue_step(k, options_.prompt_len);
    next.push_back(download_tokens(tokens_.data(), 1).front());  // waits: the plan goes with k
    if (options_.copy_groups && options_.mode != Mode::no_attention) {
      // Every sequence of the group gets the group's KV at the start of its leaf.
      const std::size_t bytes = static_cast<std::size_t>(len) * row * elem, leaf_bytes = static_cast<std::size_t>(g.leaf_stride) * row * elem;
      for (Layer& l : layers_) {
        for (int s = 0; s < options_.batch; ++s) {
          if (seq_group_[static_cast<std::size_t>(s)] != static_cast<int>(i)) continue;
          rt_.copy(static_cast<char*>(l.leaf_k.data()) + s * leaf_bytes, static_cast<const char*>(l.group_k.data()) + start * row * elem, bytes);
          rt_.copy(static_cast<char*>(l.leaf_v.data()) + s * leaf_bytes, static_cast<const char*>(l.group_v.data()) + start * row * elem, bytes);
        }
      }
    }
    start += len;
  }
  logits_rows_ = 1;
  groups_prefilled_ = true;
  reset();
  return next;
}

void Decoder::reset() {
  require(prefilled_, "reset() returns to the state after the prefill: prefill first");
  rt_.synchronize();
  // A leaf starts after what it holds of the path: flash's copy of the prompt, or its copied group.
  std::vector<int> lengths(static_cast<std::size_t>(options_.batch), options_.mode == Mode::flash ? options_.prompt_len : 0);
  if (options_.copy_groups) {
    for (std::size_t s = 0; s < lengths.size(); ++s) {
      lengths[s] = seq_group_[s] < 0 ? 0 : options_.group_lens[static_cast<std::size_t>(seq_group_[s])];
    }
  }
  rt_.memory().copy_from_host(leaf_length_.data(), lengths.data(), lengths.size() * sizeof(int));
  suffix_len_ = 0;
}

Decoder::Bucket& Decoder::bucket_for(int q_len, int needed) {
  const Geometry g = geometry(shard_, options_);
  // What a leaf holds ahead of its suffix: flash's prompt, or the longest copied group.
  const auto path_in_leaf = static_cast<int>(g.leaf_stride) - options_.suffix_capacity;
  const auto stride = static_cast<int>(g.leaf_stride);
  const int capacity = std::min(stride, (needed + options_.bucket - 1) / options_.bucket * options_.bucket + path_in_leaf);
  for (const auto& k : buckets_) {
    if (k->q_len == q_len && k->capacity == capacity) return *k;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto k = std::make_unique<Bucket>();
  k->seqs = options_.batch;
  k->q_len = q_len;
  k->capacity = capacity;
  k->leaf_length = static_cast<int*>(leaf_length_.data());
  if (options_.mode != Mode::no_attention) {
    k->plan = backend_->plan(attention_shape(q_len), attention_tree(k->capacity), plan_options_);
    ++plans_made_;
    const std::size_t elem = dtype_size(rt_.dtype()), row = static_cast<std::size_t>(g.kv_row());
    const std::size_t queries = static_cast<std::size_t>(options_.batch) * q_len * shard_.q_heads * g.head_dim;
    // The tree's segments in order (decode_tree): the prompt, each shared group, each sequence's leaf.
    const bool shared_groups = !options_.group_lens.empty() && !options_.copy_groups;
    for (const Layer& l : layers_) {
      k->cache.push_back({static_cast<void* const*>(l.leaf_k_ptr.data()), static_cast<void* const*>(l.leaf_v_ptr.data()),
                          k->leaf_length, q_len, 0, shared_groups ? static_cast<const int*>(seq_offset_.data()) : nullptr});
      AttentionInputs in{{q_.data(), rt_.dtype(), queries}, {}, {}, k->leaf_length};
      if (options_.mode != Mode::flash) {
        in.k.push_back({l.prompt_k.data(), rt_.dtype(), static_cast<std::size_t>(options_.prompt_len) * row});
        in.v.push_back({l.prompt_v.data(), rt_.dtype(), static_cast<std::size_t>(options_.prompt_len) * row});
      }
      std::size_t group_start = 0;  // tokens into group_k / group_v
      for (int len : shared_groups ? options_.group_lens : std::vector<int>{}) {
        in.k.push_back({static_cast<const char*>(l.group_k.data()) + group_start * row * elem, rt_.dtype(), static_cast<std::size_t>(len) * row});
        in.v.push_back({static_cast<const char*>(l.group_v.data()) + group_start * row * elem, rt_.dtype(), static_cast<std::size_t>(len) * row});
        group_start += static_cast<std::size_t>(len);
      }
      for (int s = 0; s < options_.batch; ++s) {
        const std::size_t offset = static_cast<std::size_t>(s) * static_cast<std::size_t>(stride) * row * elem;
        in.k.push_back({static_cast<const char*>(l.leaf_k.data()) + offset, rt_.dtype(), static_cast<std::size_t>(k->capacity) * row});
        in.v.push_back({static_cast<const char*>(l.leaf_v.data()) + offset, rt_.dtype(), static_cast<std::size_t>(k->capacity) * row});
      }
      k->inputs.push_back(std::move(in));
    }
  }
  buckets_.push_back(std::move(k));
  replan_seconds_ += seconds_since(t0);
  return *buckets_.back();
}

StepGraph* Decoder::bind(Bucket& k, bool capture) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!k.bound && k.plan != nullptr) {
    // Attention alone, on whatever the caches hold now: its outputs are scratch until the next step.
    const AttentionOutputs out = attention_outputs(static_cast<std::int64_t>(k.seqs) * k.q_len);
    for (const AttentionInputs& in : k.inputs) k.plan->run(in, out, rt_.stream());
  }
  k.bound = true;
  if (capture && k.graph == nullptr) {
    const int offset = decode_position_offset();
    const Bucket* bucket = &k;
    k.graph = rt_.capture([this, bucket, offset] { enqueue_step(*bucket, offset); });
  }
  replan_seconds_ += seconds_since(t0);
  return k.graph.get();
}

void Decoder::prepare(int q_len, int first, int last) {
  require(prefilled_, "prefill the prompt before preparing steps");
  require(q_len >= 1 && q_len <= options_.max_q_len && q_len <= first && first <= last && last <= options_.suffix_capacity,
          "prepare(" + std::to_string(q_len) + ", " + std::to_string(first) + ", " + std::to_string(last) +
              "): needs 1 <= q_len <= max_q_len, q_len <= first <= last <= the suffix capacity " +
              std::to_string(options_.suffix_capacity));
  // Steps of several tokens run eagerly (step()), binding their plan as they go; and their leaves
  // may be too short now for the plan's causal queries.
  for (int needed = first; needed <= last; ++needed) {
    Bucket& k = bucket_for(q_len, needed);
    if (q_len == 1) bind(k, true);
  }
}

std::vector<int> Decoder::step(const std::vector<int>& tokens, int q_len) {
  require(prefilled_, "prefill the prompt before the first step");
  require(options_.group_lens.empty() || groups_prefilled_, "prefill the groups (prefill_groups) before the first step");
  require(q_len >= 1 && q_len <= options_.max_q_len,
          "q_len " + std::to_string(q_len) + " outside [1, max_q_len " + std::to_string(options_.max_q_len) + "]");
  require(static_cast<long long>(tokens.size()) == static_cast<long long>(options_.batch) * q_len,
          "a step of q_len " + std::to_string(q_len) + " takes B x q_len = " + std::to_string(options_.batch * q_len) +
              " tokens, got " + std::to_string(tokens.size()));
  require(suffix_len_ + q_len <= options_.suffix_capacity,
          "the suffixes are full: " + std::to_string(suffix_len_) + " + " + std::to_string(q_len) + " tokens exceed the capacity " +
              std::to_string(options_.suffix_capacity));
  upload_tokens(tokens);
  Bucket& k = bucket_for(q_len, suffix_len_ + q_len);
  enqueue_step(k, decode_position_offset());
  k.bound = true;
  suffix_len_ += q_len;
  logits_rows_ = options_.batch;
  return download_tokens(tokens_.data(), options_.batch);
}

std::vector<int> Decoder::generate(const std::vector<int>& first, int steps) {
  require(prefilled_, "prefill the prompt before generating");
  require(options_.group_lens.empty() || groups_prefilled_, "prefill the groups (prefill_groups) before generating");
  require(static_cast<int>(first.size()) == options_.batch,
          "generate starts from one token per sequence (" + std::to_string(options_.batch) + "), got " + std::to_string(first.size()));
  require(steps >= 0 && suffix_len_ + steps <= options_.suffix_capacity,
          std::to_string(steps) + " steps after " + std::to_string(suffix_len_) + " suffix tokens exceed the capacity " +
              std::to_string(options_.suffix_capacity));
  upload_tokens(first);
  const auto t0 = std::chrono::steady_clock::now();
  Buffer history(rt_.memory(), static_cast<std::size_t>(steps) * options_.batch * sizeof(int) + sizeof(int));
  const std::size_t step_bytes = static_cast<std::size_t>(options_.batch) * sizeof(int);
  for (int i = 0; i < steps; ++i) {
    bind(bucket_for(1, suffix_len_ + 1), true)->replay();
    rt_.copy(static_cast<char*>(history.data()) + static_cast<std::size_t>(i) * step_bytes, tokens_.data(), step_bytes);
    ++suffix_len_;
  }
  logits_rows_ = options_.batch;
  generate_host_seconds_ = seconds_since(t0);
  return download_tokens(history.data(), steps * options_.batch);
}

void Decoder::attend_alone(int steps) {
  require(backend_ != nullptr, "mode no-attention runs no attention to time alone");
  require(prefilled_, "prefill the prompt before running the steps' attention");
  require(steps >= 0 && suffix_len_ + steps <= options_.suffix_capacity,
          std::to_string(steps) + " steps after " + std::to_string(suffix_len_) + " suffix tokens exceed the capacity " +
              std::to_string(options_.suffix_capacity));
  const int offset = decode_position_offset();
  for (int i = 0; i < steps; ++i) {
    Bucket& k = bucket_for(1, suffix_len_ + 1);
    bind(k, false);
    if (k.attention_graph == nullptr) {
      const Bucket* bucket = &k;
      k.attention_graph = rt_.capture([this, bucket, offset] {
        rt_.advance(bucket->leaf_length, bucket->seqs, 1);
        for (std::size_t l = 0; l < layers_.size(); ++l) enqueue_attention(*bucket, l, offset);
      });
    }
    k.attention_graph->replay();
    ++suffix_len_;
  }
  rt_.synchronize();
}

std::vector<float> Decoder::last_logits() const {
  const Geometry g = geometry(shard_, options_);
  return rt_.download(matrix(logits_, rt_, logits_rows_, g.vocab_rows));
}

}  // namespace hydragen::decode
