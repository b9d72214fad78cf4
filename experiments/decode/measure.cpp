#include "decode/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <stdexcept>

#include "decode/collective_timing.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/tree_spec.hpp"

namespace hydragen::decode {

namespace {

std::vector<int> random_tokens(std::mt19937_64& rng, std::size_t count, int vocab) {
  std::uniform_int_distribution<int> token(0, vocab - 1);
  std::vector<int> t(count);
  for (int& x : t) x = token(rng);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

TreeSpec decode_groups(const DecodePoint& point) {
  if (point.groups.empty()) return {};
  TreeSpec spec = TreeSpec::parse(point.groups);
  if (spec.levels.size() != 1) throw std::invalid_argument("groups '" + point.groups + "': one level of groups, like 8x300-800");
  return spec;
}

std::string decode_csv_header() {
  return "device,commit,model,layers,tp,gpus,mode,backend,B,P,question_len,groups,gen_tokens,tokens_per_s,step_ms,"
         "allreduce_ms,allreduce_derived_ms,allreduce_busbw_gbps,attention_floor_ms,attention_ms,spread,answer_ms,groups_prefill_ms,host_ms_per_step,replan_ms,build_ms,prefill_ms,"
         "memory_gb,status,note\n";
}

std::string decode_csv_row(const std::string& device, const std::string& commit, const DecodeRow& r) {
  const DecodePoint& p = r.point;
  const int layers = p.layers > 0 ? p.layers : model_config(p.model).layers;
  char numbers[512];
  std::snprintf(numbers, sizeof numbers, "%.1f,%.4f,%.4f,%.4f,%.1f,%.4f,%.4f,%.4f,%.3f,%.3f,%.4f,%.2f,%.1f,%.1f,%.3f", r.tokens_per_s,
                r.step_ms, r.allreduce_ms, r.allreduce_derived_ms, r.allreduce_busbw_gbps, r.attention_floor_ms, r.attention_ms, r.spread, r.answer_ms, r.groups_prefill_ms, r.host_ms_per_step,
                r.replan_ms, r.build_ms, r.prefill_ms,
                r.memory_gb);
  return csv_field(device) + "," + csv_field(commit) + "," + p.model + "," + std::to_string(layers) + "," +
         std::to_string(p.tp) + "," + std::to_string(r.gpus) + "," + std::string(mode_name(p.mode)) + "," + csv_field(r.backend) + "," +
         std::to_string(p.batch) + "," + std::to_string(p.prompt_len) + "," + std::to_string(p.question_len) + "," +
         csv_field(p.groups) + "," + std::to_string(p.gen_tokens) + "," + numbers + "," + r.status + "," + csv_field(r.note) + "\n";
}

double attention_floor_ms(const ModelShard& shard, const DecodePoint& point, DType dtype, const Peaks& peaks) {
  if (point.mode == Mode::no_attention || peaks.flops_per_s <= 0 || peaks.bytes_per_s <= 0) return 0;
  // The middle step of the decode: suffixes of question + half the answer.
  const int suffix = point.question_len + point.gen_tokens / 2;
  const AttentionShape shape = make_shape(point.batch, 1, shard.q_heads, shard.kv_heads, shard.model.head_dim, dtype);
  const CostEstimate cost = estimate_cost(shape, decode_groups(point).build(point.batch, point.prompt_len, suffix));
  return shard.model.layers * roofline_seconds(cost.flops, cost.floor_bytes, peaks) * 1e3;
}

std::string row_backend(const DecodePoint& point, const MeasureConfig& config, const Runtime& runtime) {
  DecoderOptions options;
  options.mode = point.mode;
  options.backend = config.backend;
  const std::string backend = attention_backend(options, runtime);
  return backend.empty() ? "none" : backend;
}

DecodeRow measure_point(Runtime& runtime, const DecodePoint& point, const MeasureConfig& config, Communicator* comm,
                        WeightCache* cache) {
  DecodeRow row;
  row.point = point;
  WeightCache own_cache(runtime);  // without a cache: the point's own weights, released with it
  WeightCache& weight_cache = cache != nullptr ? *cache : own_cache;
  // Once the ranks run collectives, a failure ends the run: a rank that went on to the next point
  // would leave its peers waiting on the GPU (nccl_ranks.hpp releases them).
  bool collectives = false;
  try {
    const ModelConfig full = model_config(point.model);
    const ModelShard sh = shard(point.layers > 0 ? with_layers(full, point.layers) : full, point.tp);
    DecoderOptions options;
    options.mode = point.mode;
    options.backend = config.backend;
    options.batch = point.batch;
    options.prompt_len = point.prompt_len;
    options.suffix_capacity = point.question_len + point.gen_tokens;
    options.max_q_len = std::max(1, point.question_len);
    options.bucket = config.bucket;
    std::unique_ptr<RecordingCommunicator> recording;  // the step's collectives, to time them alone after the runs
    if (comm != nullptr) {
      recording = std::make_unique<RecordingCommunicator>(*comm);
      options.rank = comm->rank();
      options.comm = recording.get();
    }
    const TreeSpec groups = decode_groups(point);
    for (int g = 0; !groups.levels.empty() && g < groups.levels[0].groups; ++g) {
      options.group_lens.push_back(groups.levels[0].length_of(g));
    }
    options.copy_groups = groups.copied;
    row.backend = row_backend(point, config, runtime);
    row.attention_floor_ms = attention_floor_ms(sh, point, runtime.dtype(), config.peaks);
    const MemoryEstimate need = estimate_memory(sh, options, runtime);
    row.memory_gb = static_cast<double>(need.total()) / 1e9;
    // Weights held from an earlier point count as free: this point reuses them (need.weights counts
    // them once) or releases them before building its own.
    const std::size_t held = weight_cache.held_bytes();
    const double free = static_cast<double>(runtime.memory().available_bytes()) + static_cast<double>(held);
    const bool fits = static_cast<double>(need.total()) <= config.memory_fraction * free;
    const bool all_fit = comm != nullptr ? comm->all(fits) : fits;  // every rank asks, fitting or not
    if (!all_fit) {
      row.status = "x";
      row.note = "needs " + std::to_string(need.total() / 1000000) + " MB (weights " + std::to_string(need.weights / 1000000) +
                 ", KV cache " + std::to_string(need.kv_cache / 1000000) + ")" + (comm != nullptr ? " per GPU" : "") + ", " +
                 std::to_string(static_cast<long long>(free / 1e6)) + " MB free" +
                 (held > 0 ? " (" + std::to_string(held / 1000000) + " MB of it the weights held from an earlier point)" : "") +
                 (fits ? " here; another GPU has less" : "");
      return row;
    }
    std::unique_ptr<WeightSource> own;
    const WeightSource* weights = config.weights;
    if (weights == nullptr) {
      own = random_weights(config.seed);
      weights = own.get();
    }
    // Every rank's shard built before any enters a collective (a rank out of memory would leave the
    // others waiting for it).
    std::unique_ptr<Decoder> built;
    std::exception_ptr build_error;
    const auto build0 = std::chrono::steady_clock::now();
    try {
      check_decoder_options(runtime, sh, options);  // a refused point makes no weights
      row.weights_reused = weight_cache.holds(sh, *weights, options.rank);
      built = std::make_unique<Decoder>(runtime, sh, weight_cache.get(sh, *weights, options.rank), options);
    } catch (...) {
      build_error = std::current_exception();
    }
    const bool all_built = comm != nullptr ? comm->all(build_error == nullptr) : build_error == nullptr;
    if (!all_built && build_error == nullptr) throw std::runtime_error("another rank could not build its shard");
    if (build_error) std::rethrow_exception(build_error);
    Decoder& decoder = *built;
    collectives = comm != nullptr;
    row.build_ms = ms_since(build0);
    std::mt19937_64 rng(config.seed);
    const std::vector<int> prompt = random_tokens(rng, static_cast<std::size_t>(point.prompt_len), sh.model.vocab);
    const auto prefill0 = std::chrono::steady_clock::now();
    const int first = decoder.prefill(prompt);  // waits for its token
    row.prefill_ms = ms_since(prefill0);
    std::vector<int> after_groups;  // each group's next token (the first of its sequences' answers)
    if (!options.group_lens.empty()) {
      std::vector<std::vector<int>> group_tokens;
      for (int len : options.group_lens) group_tokens.push_back(random_tokens(rng, static_cast<std::size_t>(len), sh.model.vocab));
      runtime.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      after_groups = decoder.prefill_groups(group_tokens);  // waits for its tokens
      row.groups_prefill_ms = ms_since(t0);
    }
    const std::vector<int> questions =
        random_tokens(rng, static_cast<std::size_t>(point.batch) * point.question_len, sh.model.vocab);
    // Every bucket's plan and graph ahead of the runs, as a server captures its graphs at start-up.
    const double setup0 = decoder.replan_seconds();
    if (point.question_len > 0) decoder.prepare(point.question_len, point.question_len, point.question_len);
    decoder.prepare(1, point.question_len + 1, point.question_len + point.gen_tokens);
    row.replan_ms = (decoder.replan_seconds() - setup0) * 1e3;
    std::vector<double> decode_s, answer_s, host_s;
    for (int run = 0; run < config.warmup + config.runs; ++run) {
      decoder.reset();
      runtime.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<int> next(static_cast<std::size_t>(point.batch), first);
      if (point.question_len > 0) {
        next = decoder.step(questions, point.question_len);
      } else if (!after_groups.empty()) {
        for (std::size_t s = 0; s < next.size(); ++s) next[s] = after_groups[s / (next.size() / after_groups.size())];
      }
      const auto t1 = std::chrono::steady_clock::now();
      decoder.generate(next, point.gen_tokens);  // waits for its tokens
      const auto t2 = std::chrono::steady_clock::now();
      if (run < config.warmup) continue;
      decode_s.push_back(std::chrono::duration<double>(t2 - t1).count());
      answer_s.push_back(std::chrono::duration<double>(t2 - t0).count());
      host_s.push_back(decoder.generate_host_seconds());
    }
    const double decode = median(decode_s);
    row.tokens_per_s = static_cast<double>(point.batch) * point.gen_tokens / decode;
    row.step_ms = decode / point.gen_tokens * 1e3;
    row.spread = (*std::max_element(decode_s.begin(), decode_s.end()) - *std::min_element(decode_s.begin(), decode_s.end())) / decode;
    row.answer_ms = median(answer_s) * 1e3;
    row.host_ms_per_step = median(host_s) / point.gen_tokens * 1e3;
    if (point.mode != Mode::no_attention) {  // the same steps' attention alone, after its own warm-up
      std::vector<double> attention_s;
      for (int run = 0; run < config.warmup + config.runs; ++run) {
        decoder.reset();
        if (point.question_len > 0) decoder.step(questions, point.question_len);
        runtime.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        decoder.attend_alone(point.gen_tokens);
        if (run >= config.warmup) attention_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      row.attention_ms = median(attention_s) / point.gen_tokens * 1e3;
    }
    if (recording != nullptr) {  // one decode step again, eager, its collectives recorded, then replayed alone
      decoder.reset();
      std::vector<int> next(static_cast<std::size_t>(point.batch), first);
      if (point.question_len > 0) next = decoder.step(questions, point.question_len);
      recording->take();
      decoder.step(next, 1);
      const CollectiveTiming timing = time_collectives(runtime, *comm, recording->take());
      row.allreduce_ms = timing.ms;
      row.allreduce_busbw_gbps = timing.busbw_gbps;
    }
  } catch (const OutOfMemory& e) {
    if (collectives) throw;
    row.status = "x";
    row.note = e.what();
  } catch (const std::exception& e) {
    if (collectives) throw;
    row.status = "error";
    row.note = e.what();
  }
  return row;
}

DecodeRow measure_point_ranks(Runtime& runtime, const DecodePoint& point, const MeasureConfig& config, Communicator& comm,
                              WeightCache* cache) {
  DecodeRow alone;
  if (comm.rank() == 0) alone = measure_point(runtime, point, config, nullptr, cache);  // the same shard, no collectives
  comm.all(true);  // the other ranks wait meanwhile
  DecodeRow row = measure_point(runtime, point, config, &comm, cache);
  row.gpus = comm.size();
  if (comm.rank() == 0 && row.status == "ok" && alone.status == "ok") {
    row.allreduce_derived_ms = row.step_ms - alone.step_ms;
    // The shard was made (or its weights found) by the run alone; the run together reused them.
    row.build_ms = alone.build_ms;
    row.weights_reused = alone.weights_reused;
  }
  return row;
}

}  // namespace hydragen::decode
