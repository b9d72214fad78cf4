#include "rules.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

namespace {

// "a=1 b=2": a decision's inputs.
class Inputs {
 public:
  template <typename T>
  Inputs& operator()(const char* name, const T& value) {
    out_ << (first_ ? "" : " ") << name << "=" << value;
    first_ = false;
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  bool first_ = true;
};

template <typename T>
Ruled<T> ruled(T choice, const char* rule, std::string shown, const Inputs& in, std::string reason) {
  return {std::move(choice), Decision{rule, std::move(shown), in.str(), std::move(reason)}};
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string number_text(double x) {
  std::ostringstream s;
  s.precision(3);
  s << x;
  return s.str();
}

std::string ns_text(double ns) { return number_text(ns / 1000) + " us"; }

// The wide blocks and the longest part that a target of `target_blocks` cuts the census's wide blocks
// into (each its share by tokens, wide_split_count).
struct WideCut {
  long long blocks = 0, longest = 0;
};
WideCut wide_cut(const BlockCensus& census, long long target_blocks) {
  WideCut cut;
  for (long long tokens : census.wide_block_tokens) {
    const long long parts = wide_split_count(tokens, target_blocks, census.wide_tokens);
    cut.blocks += parts;
    cut.longest = std::max(cut.longest, (tokens + parts - 1) / parts);
  }
  return cut;
}

// The cost models' two rates: a wgmma block's compute over `tokens` (S and P V of its 128 rows at the
// device's steady per-SM rate), and the bytes of one token's K and V.
double wgmma_ns(long long tokens, const AttentionShape& shape, const DeviceRates& rates) {
  return static_cast<double>(tokens) * 4.0 * kWgmmaRows * shape.head_dim / rates.wgmma_sm_flops_per_ns;
}
double kv_token_bytes(const AttentionShape& shape) { return 2.0 * shape.head_dim * static_cast<double>(dtype_size(shape.dtype)); }

// The leaf SMs whose stream reaches the DRAM rate that leaves on some of the SMs get (fractional).
double beside_dram_sms(const DeviceRates& rates) {
  return rates.beside_leaf_dram_share * rates.leaf_dram_bytes_per_ns / rates.leaf_sm_bytes_per_ns;
}

}  // namespace

Ruled<std::optional<DeviceRates>> device_and_rates(const DeviceLimits& device) {
  Inputs in;
  in("sms", device.sms)("wgmma", yes_no(device.wgmma))("dependent_launch", yes_no(device.dependent_launch));
  std::optional<DeviceRates> rates = device.rates ? device.rates : device_rates(device.name);
  const std::string why = rates ? "rates: " + rates->source
                                : "rates: none (device-rates.csv has no row for it; the cost models abstain)";
  return ruled(std::move(rates), "device", device.name.empty() ? "unnamed" : device.name, in, why);
}

Ruled<ItemKernel> wide_kernel(DType dtype, bool mma_only, bool flat_paths, const DeviceLimits& device) {
  Inputs in;
  in("dtype", dtype_name(dtype))("wide_kernel_option", mma_only ? "mma64" : "auto")("wgmma_device", yes_no(device.wgmma));
  if (dtype == DType::fp32) return ruled(ItemKernel::simt, "wide_kernel", "simt (CUDA cores)", in, "fp32 has only CUDA-core blocks");
  if (flat_paths) {
    return ruled(ItemKernel::mma64, "wide_kernel", "mma64 (mma.sync)", in,
                 "cuda-flash's items read whole paths; wgmma items read one segment each (TMA descriptors per segment)");
  }
  if (device.wgmma && !mma_only) return ruled(ItemKernel::wgmma, "wide_kernel", "wgmma", in, "the device runs sm_90a code");
  return ruled(ItemKernel::mma64, "wide_kernel", "mma64 (mma.sync)", in,
               mma_only ? "wide_kernel=mma64 asks for mma.sync" : "the device has no wgmma (sm_90a) kernel");
}

Ruled<bool> inline_paths(const std::string& option, long long narrow_paths, int kv_heads, const DeviceLimits& device) {
  Inputs in;
  in("inline_option", option)("narrow_paths", narrow_paths)("kv_heads", kv_heads)("sms", device.sms);
  if (option == "never") return ruled(false, "inline_paths", "no", in, "inline=never keeps every segment in items of its own");
  const bool yes = narrow_paths > 0 && kInlinePathsShare * narrow_paths * kv_heads >= device.sms;
  return ruled(yes, "inline_paths", yes_no(yes), in,
               yes ? "paths x KV heads reach a quarter of the SMs: their reads side by side find the shared K/V in L2"
                   : narrow_paths == 0 ? "no segment has readers few enough to fit one 16-row block"
                                       : "fewer paths x KV heads than a quarter of the SMs: on a nearly idle GPU the segments' own parts "
                                         "run shorter");
}

Ruled<long long> wide_target_blocks(ItemKernel wide, const BlockCensus* census, const AttentionShape& shape,
                                    const std::optional<DeviceRates>& rates, const DeviceLimits& device,
                                    const std::vector<long long>* after_leaf_items) {
  const int waves = wide == ItemKernel::wgmma ? kWgmmaWaves : kMmaWaves;
  const long long target = static_cast<long long>(waves) * blocks_per_sm(wide) * device.sms;
  Inputs in;
  in("kernel", kernel_name(wide))("blocks_per_sm", blocks_per_sm(wide))("sms", device.sms);
  auto out = [&](long long blocks, const std::string& why) { return ruled(blocks, "wide_target_blocks", std::to_string(blocks), in, why); };
  if (wide != ItemKernel::wgmma) return out(target, "three waves of the latency-bound mma.sync blocks");
  const char* one_wave = "one wave of wgmma blocks: each split adds a partial per row and a pipeline fill";
  if (census == nullptr || census->wide_block_tokens.empty()) return out(target, one_wave);
  const WideCut wave = wide_cut(*census, target);
  // Leaves count where they have tokens to stream beside the wgmma blocks (fig6's leaves of one token
  // ran 1.07x slower on half a wave) and more than one row each: one-row leaves (MHA decoding) over a
  // wave's parts of 512 tokens ran 0.91x-1.02x, the decoder's step 1.01x (perf-notes v30).
  long long leaf_rows = 0;
  for (const RowBlock& b : census->blocks) leaf_rows += b.narrow() ? b.count : 0;
  const long long leaf_blocks = census->narrow_blocks;
  const long long leaf_tokens = total_tokens(census->narrow_tokens);
  const bool leaves = leaf_blocks > 0 && leaf_tokens >= kHalfWaveLeafTokens * leaf_blocks && leaf_rows > leaf_blocks;
  in("wave_blocks", wave.blocks)("wave_longest_part", wave.longest)("leaf_blocks", leaf_blocks)("leaf_rows", leaf_rows)(
      "leaf_tokens", leaf_tokens);
  // Fewer parts per row block, so that the leaves stream on the other SMs while the parts compute instead
  // of after them: for one-row leaves where a wave would hold every SM (perf-notes v31); for leaves of
  // more rows, once rule leaf_layout has put them after the launch, where their items would not all be
  // resident on the SMs that the wave (or half wave) leaves free (v61).
  const bool short_parts = 2 * wave.blocks > target && wave.longest <= (leaves ? kHalfWaveLeafPartTokens : kMinSplitTokens);
  const long long launch_blocks = short_parts ? wide_cut(*census, target / 2).blocks : wave.blocks;
  // The leaves after the launch: their items, as rule narrow_kernel would run them, resident beside a
  // launch of `blocks` wgmma blocks.
  const long long after_items = after_leaf_items ? static_cast<long long>(after_leaf_items->size()) : 0;
  const ItemKernel leaf_kernel =
      after_items > 0 ? narrow_kernel(shape.dtype, "auto", 0, *after_leaf_items, false, device, false).choice : ItemKernel::token_warps;
  auto slots_beside = [&](long long blocks) {
    return std::max<long long>(0, device.sms - blocks) * blocks_per_sm(leaf_kernel) * items_per_block(leaf_kernel);
  };
  const bool one_row = leaf_rows == leaf_blocks && !short_parts;
  bool overflow = false;
  if (after_items > 0) {
    const long long slots = slots_beside(launch_blocks);
    in("launch_blocks", launch_blocks)("after_leaf_items", after_items)("leaf_slots_beside", slots);
    overflow = leaf_rows > leaf_blocks && after_items > slots;
  }
  if (rates && leaf_blocks > 0 && (one_row || overflow)) {
    const long long row_blocks = static_cast<long long>(census->wide_block_tokens.size());
    const long long longest = *std::max_element(census->wide_block_tokens.begin(), census->wide_block_tokens.end());
    const double row_block_ns = wgmma_ns(longest, shape, *rates);
    const double stream_ns = static_cast<double>(leaf_tokens) * kv_token_bytes(shape) / rates->leaf_dram_bytes_per_ns;
    in("row_blocks", row_blocks)("row_block", ns_text(row_block_ns))("leaf_stream", ns_text(stream_ns));
    auto cut_into = [&](long long parts, const char* why) {
      return out(row_blocks * parts, std::to_string(parts) + (parts == 1 ? " part" : " parts") + " per row block: " + why);
    };
    // Parts per row block the launch may take: within half the SMs, and fewer than the wave (or half wave).
    auto allowed = [&](long long parts) { return 2 * row_blocks * parts <= target && parts < launch_blocks / row_blocks; };
    // The fewest allowed parts (1, 2, 4, ...) under `limit` whose compute the leaves' stream covers; 0 if none.
    auto covered = [&](long long limit) {
      for (long long parts = 1; allowed(parts) && parts < limit; parts *= 2) {
        if (stream_ns * static_cast<double>(parts) >= row_block_ns) return parts;
      }
      return 0LL;
    };
    if (one_row) {
      if (const long long parts = covered(target)) {
        return cut_into(parts, "one-row leaves stream longer than a part computes; they run beside it on the other SMs");
      }
    } else {
      // The most parts whose launch leaves room for all the leaves' items on the other SMs. Where none
      // does, one part, if the SMs the wave leaves cannot stream the leaves at the DRAM rate beside it.
      // Taken where the leaves' stream covers kAfterLeavesCover of a part's compute: shorter leaves wait
      // less in a second wave than a longer part adds (perf-notes v61).
      long long parts = 0;
      for (long long p = 1; allowed(p); p *= 2) {
        if (after_items <= slots_beside(row_blocks * p)) parts = p;
      }
      const long long free_sms = std::max<long long>(0, device.sms - launch_blocks);
      const bool starved = static_cast<double>(free_sms) < beside_dram_sms(*rates);
      const char* why = "the leaves after it fit on the other SMs only with fewer parts";
      if (parts == 0 && starved && launch_blocks / row_blocks > 1) {
        parts = 1;
        why = "the leaves after it stream on too few SMs beside a wave; one part leaves them more";
      }
      // Fewer still where the leaves' stream covers a whole part's compute: the leaves are the longer
      // path either way, and each part adds partial rows and a fold round ((256, 1024, 512): 1.03x on two).
      if (const long long fewer = covered(parts)) {
        parts = fewer;
        why = "the leaves after it, more than the other SMs hold, stream longer than a part computes";
      }
      if (parts > 0 && stream_ns * static_cast<double>(parts) >= kAfterLeavesCover * row_block_ns) return cut_into(parts, why);
    }
  }
  if (short_parts) {
    return out(target / 2, leaves ? "half a wave: a wave would cut parts of at most " + std::to_string(kHalfWaveLeafPartTokens) +
                                        " tokens; the leaves stream on the other half meanwhile, and few parts let them fold the merge"
                                  : std::string("half a wave: a wave would cut the shortest parts, whose fixed costs and partials cost "
                                                "more than the SMs they fill"));
  }
  return out(target, one_wave);
}

Ruled<long long> wide_parts_target(const std::string& option, long long row_blocks) {
  const long long parts = std::stoll(option);  // one of the option's declared numbers
  Inputs in;
  in("wide_parts", parts)("wide_row_blocks", row_blocks);
  return ruled(parts * row_blocks, "wide_target_blocks", std::to_string(parts * row_blocks), in,
               "wide_parts=" + option + ": that many parts per row block, by tokens");
}

Ruled<long long> narrow_split(const BlockCensus& census, int narrow_slots, const DeviceLimits& device) {
  const long long count = census.narrow_blocks, slots = narrow_slots;
  const long long min_blocks = census.narrow_stream ? std::min<long long>(device.sms, slots) : slots;
  long long parts = 1;
  if (count > 0) {
    for (parts = std::max<long long>(1, min_blocks / count);; ++parts) {
      const long long blocks = count * parts, tail = blocks % slots;
      if (blocks <= slots || tail == 0 || 2 * tail >= slots || blocks >= kNarrowMaxWaves * slots || parts >= kMaxSplits) break;
    }
  }
  Inputs in;
  in("narrow_blocks", count)("streaming", yes_no(census.narrow_stream))("resident_blocks", slots)("sms", device.sms);
  return ruled(parts, "narrow_split", std::to_string(parts) + (parts == 1 ? " part" : " parts") + " per block", in,
               census.narrow_stream ? "blocks streaming their own K/V aim for one per SM, then fill the last wave"
                                    : "blocks sharing K/V through L2 aim for a wave of resident blocks, then fill the last wave");
}

Ruled<bool> one_narrow_launch(LaunchRecipe wide_recipe, int wide_fold_rounds, const BlockCensus& narrow_form,
                              const std::vector<long long>& narrow_form_items, const DeviceLimits& device) {
  const long long items = static_cast<long long>(narrow_form_items.size());
  const long long longest = items == 0 ? 0 : *std::max_element(narrow_form_items.begin(), narrow_form_items.end());
  Inputs in;
  const bool wide_one_launch = wide_recipe == LaunchRecipe::one_launch;  // one kind of items: wide blocks alone, or leaves alone
  const bool folded = wide_recipe == LaunchRecipe::folded_leaves;
  in("wide_form_launches", wide_one_launch ? 1 : 2)("wide_form_recipe", recipe_name(wide_recipe))(
      "wide_form_fold_rounds", folded ? wide_fold_rounds : 0)("narrow_form_blocks", narrow_form.narrow_blocks)(
      "narrow_form_items", items)("narrow_form_longest_item", longest)("sms", device.sms);
  auto wide = [&](const std::string& why) { return ruled(false, "form", "wide", in, why); };
  if (wide_one_launch) return wide("the wide form is one launch already");
  const bool one_wave = items <= device.sms && longest <= kNarrowFormItemTokens;
  if (folded && wide_fold_rounds > kFoldRounds && one_wave) {
    return ruled(true, "form", "narrow (one launch of 16-row blocks)", in,
                 "at most one short 16-row item per SM, against the wide form's leaves folding more than " +
                     std::to_string(kFoldRounds) + " rows each ((16, 2048, 64-256) 1.02-1.05x slower so, perf-notes v49)");
  }
  if (folded) {
    return wide("the wide form's leaves fold its merge: two launches in a chain, no join, the prefix read once per 128 rows");
  }
  const bool short_second_wave = items <= 2LL * device.sms && longest <= kNarrowFormTwoWaveItemTokens;
  if (!one_wave && !short_second_wave) {
    return wide("16-row items would be more than one per SM or longer than " + std::to_string(kNarrowFormItemTokens) +
                " tokens (more than two per SM, or longer than " + std::to_string(kNarrowFormTwoWaveItemTokens) + ", for a second wave)");
  }
  return ruled(true, "form", "narrow (one launch of 16-row blocks)", in,
               one_wave ? "at most one short 16-row item per SM: latency alone, and one launch saves the second and the join of two streams"
                        : "a second wave of 16-row items this short still costs less than the wide form's second launch and its join");
}

Ruled<LeafLayout> leaf_layout(const std::string& option, const std::string& wide_parts, const std::string& narrow_option,
                              const std::string& leaf_sms_option, bool inside_allowed,
                              ItemKernel wide_kernel, const AttentionShape& shape, const BlockCensus& census,
                              const ItemLengths& after, const std::optional<DeviceRates>& rates, const DeviceLimits& device) {
  LeafLayout best;
  Inputs in;
  const long long leaf_tokens = total_tokens(after.narrow);
  if (leaf_sms_option != "auto" && option != "beside") {
    throw std::invalid_argument("cuda-hydragen: leaf_sms=" + leaf_sms_option + " sizes the beside layout: it needs leaves=beside");
  }
  in("leaves_option", option)("wide_parts", wide_parts)("leaf_rows", shape.q_len * (shape.q_heads / shape.kv_heads))("row_blocks", census.wide_block_tokens.size())("leaf_items", after.narrow.size())(
      "leaf_tokens", leaf_tokens)("sms", device.sms);
  int most = 0;  // rows of the largest narrow block
  for (const RowBlock& b : census.blocks) {
    if (b.narrow()) most = std::max(most, b.count);
  }
  // The leaves' 16-token tiles per leaf warp of a wave of wgmma blocks, against the wgmma launch's
  // 128-token tiles per SM: inside pays where the first is a small share of the second.
  double leaf_tiles = 0;
  for (long long tokens : after.narrow) leaf_tiles += static_cast<double>((tokens + 15) / 16);
  const double wide_tiles = static_cast<double>(census.wide_tokens) / kWgmmaTileTokens[0] / device.sms;
  const double inside_tile_share = wide_tiles > 0 ? leaf_tiles / (device.sms * kWgmmaLeafWarps) / wide_tiles : 0;
  const long long wave_part = census.wide_block_tokens.empty() ? 0 : wide_cut(census, device.sms).longest;
  const auto& blocks_tokens = census.wide_block_tokens;
  const bool equal_row_blocks = std::adjacent_find(blocks_tokens.begin(), blocks_tokens.end(), std::not_equal_to<>()) ==
                                blocks_tokens.end();
  if (option == "inside" || option == "auto") {
    in("most_leaf_rows", most)("inside_tile_share", number_text(inside_tile_share))("wave_longest_part", wave_part)(
        "equal_row_blocks", yes_no(equal_row_blocks));
  }
  const bool inside_fits = wide_kernel == ItemKernel::wgmma && census.narrow_blocks > 0 && !census.wide_block_tokens.empty() &&
                           most <= kTokenProductRows && narrow_option == "auto";
  // Under the bound, or under the higher one where the leaves have 8 rows beside equal row blocks.
  const bool under_bound = inside_tile_share <= kInsideLeafTileShare;
  const bool full_leaves = most == kTokenProductRows && equal_row_blocks;
  if (option == "auto" && wide_parts == "auto" && inside_allowed && inside_fits && wave_part > kHalfWaveLeafPartTokens &&
      (under_bound || (full_leaves && inside_tile_share <= kInsideFullLeafTileShare))) {
    LeafLayout inside;
    inside.inside = true;
    const std::string why =
        under_bound
            ? "the leaves' tiles per leaf warp at most " + number_text(kInsideLeafTileShare) + " of the wgmma tiles per SM"
            : "leaves of " + std::to_string(kTokenProductRows) + " rows beside equal row blocks, their tiles per leaf warp at most " +
                  number_text(kInsideFullLeafTileShare) + " of the wgmma tiles per SM";
    return ruled(inside, "leaf_layout", "inside", in,
                 why + ", a wave's parts longer than " + std::to_string(kHalfWaveLeafPartTokens) +
                     " tokens: three warps of every wgmma block stream them (0.82x-1.01x, perf-notes v37, v41)");
  }
  if (option == "inside") {
    if (narrow_option != "auto") {
      throw std::invalid_argument("cuda-hydragen: leaves=inside runs the leaves in the wgmma blocks' warps; narrow_kernel=" +
                                  narrow_option + " asks for another kernel");
    }
    auto not_inside = [&](const std::string& why) { return ruled(best, "leaf_layout", "after", in, "leaves=inside, but " + why); };
    if (wide_kernel != ItemKernel::wgmma) return not_inside("no wgmma launch");
    if (census.narrow_blocks == 0 || census.wide_block_tokens.empty()) return not_inside("one kind of items");
    if (most > kTokenProductRows) {
      return not_inside("an item has " + std::to_string(most) + " rows: the leaf warps' token product holds " +
                   std::to_string(kTokenProductRows));
    }
    LeafLayout inside;
    inside.inside = true;
    return ruled(inside, "leaf_layout", "inside", in, "leaves=inside: a warp per leaf in three warps of every wgmma block");
  }
  if (wide_parts != "auto" && option != "beside") {
    return ruled(best, "leaf_layout", "after", in, "wide_parts=" + wide_parts + " fixes the wide launch's parts: the leaves after");
  }
  if (option == "after") return ruled(best, "leaf_layout", "after", in, "leaves=after");
  if (wide_kernel != ItemKernel::wgmma) return ruled(best, "leaf_layout", "after", in, "no wgmma launch");
  if (census.narrow_blocks == 0 || census.wide_block_tokens.empty()) {
    return ruled(best, "leaf_layout", "after", in, "one kind of items: nothing runs beside");
  }
  if (narrow_option != "auto") {
    if (option == "auto") return ruled(best, "leaf_layout", "after", in, "narrow_kernel=" + narrow_option + " keeps the leaves after");
    throw std::invalid_argument("cuda-hydragen: leaves=beside runs the leaves a warp each on SMs of their own; narrow_kernel=" +
                                narrow_option + " asks for another kernel");
  }
  if (device.sms < 2) return ruled(best, "leaf_layout", "after", in, "one SM: no room for a side of its own");
  if (!rates) {
    if (option == "beside") {
      throw std::invalid_argument("cuda-hydragen: leaves=beside sizes the leaves' SMs from the device's rates, and device-rates.csv "
                                  "has none for '" + device.name + "'");
    }
    return ruled(best, "leaf_layout", "after", in,
                 "no rates for '" + device.name + "' in device-rates.csv: the cost model abstains (leaves after)");
  }
  const DeviceRates& r = *rates;
  const double token_bytes = kv_token_bytes(shape);
  const double leaf_bytes = static_cast<double>(leaf_tokens) * token_bytes;
  const double shared_bytes = static_cast<double>(census.wide_distinct_tokens) * token_bytes;  // once from DRAM, shared through L2
  const double leaf_items = static_cast<double>(after.narrow.size());
  const bool measured_leaves = static_cast<double>(leaf_tokens) <= kBesideMaxLeafTokens * leaf_items;
  // Leaves of one row each (MHA, q_len 1); short ones: the model misses their per-item cost.
  const bool one_row_leaves = shape.q_len * (shape.q_heads / shape.kv_heads) == 1;
  const bool short_one_row_leaves = one_row_leaves && static_cast<double>(leaf_tokens) < kBesideMinOneRowLeafTokens * leaf_items;
  const long long row_blocks = static_cast<long long>(census.wide_block_tokens.size());
  // After: the wgmma launch (bound by its compute or its DRAM reads), the leaves streaming on the
  // SMs it leaves meanwhile, then the rest of them on every SM; the whole bounded by both launches'
  // DRAM reads.
  const double dram = r.leaf_dram_bytes_per_ns;
  const ListSchedule launch = list_schedule(after.wide, device.sms);
  const double wide = std::max(wgmma_ns(launch.end_tokens, shape, r), shared_bytes / dram);
  const double rest = std::max(0.0, leaf_bytes - wgmma_ns(launch.idle_sm_tokens, shape, r) * r.leaf_sm_bytes_per_ns);
  best.after_ns = std::max(wide + rest / std::min(device.sms * r.leaf_sm_bytes_per_ns, dram), (shared_bytes + leaf_bytes) / dram) +
                  r.fixed_ns;
  // Beside: p parts per row block, dealt m to each of W persistent wgmma blocks; the leaves on as
  // many of the other SMs as stream them within the wgmma launch's time (more slowed the wgmma
  // blocks' L2 reads); the whole bounded by both launches' DRAM reads. A leaf is one warp's: leaves
  // fewer than kLeafWarpsFillingAnSm a leaf SM stream at their warps' rate, not their SMs'.
  // leaves=beside with wide_parts=N or leaf_sms=N: the model's best layout of those parts or leaf SMs.
  const int fixed_parts = wide_parts == "auto" ? 0 : std::stoi(wide_parts);
  const int fixed_leaf_sms = leaf_sms_option == "auto" ? 0 : std::stoi(leaf_sms_option);
  if (fixed_leaf_sms >= device.sms) {
    throw std::invalid_argument("cuda-hydragen: leaf_sms=" + leaf_sms_option + " leaves no SM of the " + std::to_string(device.sms) +
                                " for the wgmma launch");
  }
  const double leaves_rate_cap = leaf_items * r.leaf_sm_bytes_per_ns / kLeafWarpsFillingAnSm;
  // Leaves of more rows on no more SMs than stream them at the beside DRAM rate: more add nothing to the
  // leaves' time here, and ran slower (68 leaf SMs beside 64 wgmma blocks: 0.90x-0.95x on 65). One-row
  // leaves (MHA decoding) keep every SM the model asks for: capped, the decoder's attention ran 1.5% slower
  // (perf-notes v63).
  const double dram_sms = one_row_leaves ? static_cast<double>(device.sms) : std::ceil(beside_dram_sms(r));
  int best_parts = 0;
  double best_score = 0;
  for (int parts = std::max(1, fixed_parts); parts <= (fixed_parts > 0 ? fixed_parts : kMaxSplits) &&
                                              row_blocks * parts <= kMaxPartsPerWorker * device.sms;
       ++parts) {
    const WideCut cut = wide_cut(census, row_blocks * parts);  // what the schedule cuts for that target
    const long long n = cut.blocks;
    const double part_ns = wgmma_ns(cut.longest, shape, r);
    for (long long m = std::max<long long>(1, (n + device.sms - 2) / (device.sms - 1)); m <= kMaxPartsPerWorker; ++m) {
      const long long workers = (n + m - 1) / m;
      if (fixed_leaf_sms > 0 && workers > device.sms - fixed_leaf_sms) continue;
      const double prefix_ns = static_cast<double>(m) * part_ns + static_cast<double>(m - 1) * r.part_switch_ns;
      const double needed = std::ceil(leaf_bytes / (prefix_ns * r.leaf_sm_bytes_per_ns));
      const int leaf_sms =
          fixed_leaf_sms > 0 ? fixed_leaf_sms
                             : std::max(1, static_cast<int>(std::min({needed, dram_sms, static_cast<double>(device.sms - workers)})));
      const double leaves_ns = leaf_bytes / std::min({leaf_sms * r.leaf_sm_bytes_per_ns, leaves_rate_cap, r.beside_leaf_dram_share * dram});
      const double ns = std::max({prefix_ns, leaves_ns, (shared_bytes + leaf_bytes) / dram}) + r.merge_ns + r.fixed_ns;
      // Fixed leaf SMs fix the leaves' time: the wgmma launch as short as it goes beside them.
      const double score = fixed_leaf_sms > 0 ? prefix_ns : ns;
      if (best.beside_ns == 0 || score < best_score) {
        best_score = score;
        best.beside_ns = ns;
        best.leaf_sms = leaf_sms;
        best_parts = parts;
        best.wide_workers = static_cast<int>(workers);
      }
    }
  }
  const bool forced = option == "beside";
  if (forced && best.beside_ns == 0 && (fixed_parts > 0 || fixed_leaf_sms > 0)) {
    throw std::invalid_argument("cuda-hydragen: leaves=beside with wide_parts=" + wide_parts + " and leaf_sms=" + leaf_sms_option +
                                ": no beside layout of the " + std::to_string(row_blocks) + " row blocks fits " +
                                std::to_string(device.sms) + " SMs (at most " + std::to_string(kMaxPartsPerWorker) +
                                " parts a wgmma block)");
  }
  best.beside = best.beside_ns > 0 &&
                (forced || (measured_leaves && !short_one_row_leaves && best.beside_ns < r.beside_margin * best.after_ns));
  best.wide_target_blocks = row_blocks * best_parts;
  std::string times = "after " + ns_text(best.after_ns) + ", beside " + (best.beside_ns > 0 ? ns_text(best.beside_ns) : "none") +
                      " (" + r.source + ")";
  if (!best.beside) {
    const std::string why = best.beside_ns == 0 ? "no beside layout fits"
                            : !measured_leaves  ? "leaves average more than 512 tokens, where beside was never measured"
                            : short_one_row_leaves ? "leaves of one row averaging under 32 tokens: beside lost at every such point measured"
                                                : "beside not predicted " + number_text(r.beside_margin) + "x of after";
    const LeafLayout after_layout{false, false, 0, 0, 0, best.after_ns, best.beside_ns};
    return ruled(after_layout, "leaf_layout", "after", in, why + ": " + times);
  }
  const std::string shown = "beside (" + std::to_string(best.leaf_sms) + " leaf SMs, " + std::to_string(best_parts) +
                            " parts per row block on " + std::to_string(best.wide_workers) + " wgmma blocks)";
  return ruled(best, "leaf_layout", shown, in, (forced ? "leaves=beside: " : "predicted faster: ") + times);
}

Ruled<ItemKernel> narrow_kernel(DType dtype, const std::string& option, int leaf_sms, const std::vector<long long>& items,
                                bool alone, const DeviceLimits& device, bool inside) {
  const long long n = static_cast<long long>(items.size()), slots = resident_blocks(ItemKernel::token_warps, device);
  const long long tokens = total_tokens(items);
  Inputs in;
  in("dtype", dtype_name(dtype))("narrow_kernel_option", option)("items", n)("tokens", tokens)("alone", yes_no(alone))(
      "resident_blocks", slots)("sms", device.sms);
  if (dtype == DType::fp32) return ruled(ItemKernel::simt, "narrow_kernel", "simt (CUDA cores)", in, "fp32 has only CUDA-core blocks");
  if (inside) {
    return ruled(ItemKernel::item_warps, "narrow_kernel", "item_warps (in the wgmma blocks)", in,
                 "leaves inside: warp workers in the wgmma blocks' producer warpgroup");
  }
  if (leaf_sms > 0) {
    return ruled(ItemKernel::sm_item_warps, "narrow_kernel", "sm_item_warps", in, "leaves on SMs of their own: a warp per item, an SM's twelve to a block");
  }
  if (option == "token_warps") return ruled(ItemKernel::token_warps, "narrow_kernel", "token_warps", in, "narrow_kernel=token_warps");
  if (option == "item_warps") return ruled(ItemKernel::item_warps, "narrow_kernel", "item_warps", in, "narrow_kernel=item_warps");
  auto tiles_at_most = [&](long long tiles) { return tokens <= tiles * kMmaTokens * n; };
  const char* why = nullptr;
  if (tiles_at_most(kWarpsShortTiles) && n >= device.sms) {  // none of these holds for no items
    why = "items of at most one tile, at least one per SM";
  } else if (tiles_at_most(kWarpsQueuedTiles) && n > slots) {
    why = "items of at most three tiles, more than the resident blocks";
  } else if (tiles_at_most(kWarpsSecondWaveTiles) && n > slots && n < 2 * slots) {
    why = "items of at most eight tiles over one to two waves of blocks: one wave of warps holds them all";
  } else if (alone && tiles_at_most(kWarpsAloneTiles) && n > 2 * slots && n <= kItemWarps * slots) {
    why = "alone, items of at most 18 tiles over two to four waves of blocks: one wave of warps";
  }
  if (why != nullptr) return ruled(ItemKernel::item_warps, "narrow_kernel", "item_warps", in, why);
  return ruled(ItemKernel::token_warps, "narrow_kernel", "token_warps", in,
               n == 0 ? "no narrow items" : "four token warps cut each item's chain of tiles by four");
}

Ruled<int> launch_workers(const char* launch, const std::string& option, ItemKernel kernel, DType dtype,
                          const std::vector<long long>& items, int leaf_sms, int dealt_runs, const DeviceLimits& device) {
  const int n = static_cast<int>(items.size());
  Inputs in;
  in("workers_option", option)("kernel", kernel_name(kernel))("items", n)("tokens", total_tokens(items))("sms", device.sms);
  auto out = [&](int workers, std::string why) {
    return ruled(workers, "launch_workers", std::string(launch) + ":" + std::to_string(workers), in, std::move(why));
  };
  if (dealt_runs > 0) return out(dealt_runs, "persistent wgmma blocks, a run of dealt items each");
  if (kernel == ItemKernel::sm_item_warps) return out(std::min(n, leaf_sms * kSmWarps), "a warp for each of the leaves' SMs' warps");
  const long long slots = static_cast<long long>(resident_blocks(kernel, device)) * items_per_block(kernel);
  const bool mma = kernel != ItemKernel::wgmma && dtype != DType::fp32;
  const int resident = static_cast<int>(std::min<long long>(n, slots));
  if (mma && option == "resident") return out(resident, "narrow_workers=resident");
  if (mma && option == "items") return out(n, "narrow_workers=items");
  const bool persistent = mma && n >= kPersistentItemsPerSlot * slots &&
                          total_tokens(items) <= static_cast<long long>(kPersistentTilesPerItem) * kMmaTokens * n;
  if (persistent) return out(resident, "many short items: persistent workers, as many as are resident");
  return out(n, "one per item: the block scheduler balances a few waves, or long items, better");
}

int fold_rounds(const Schedule& s, ItemKernel narrow) {
  if (s.narrow_rows_fold(kFoldRounds, narrow)) return kFoldRounds;
  if (narrow == ItemKernel::token_warps && s.narrow_rows_fold(kLongFoldRounds, narrow)) return kLongFoldRounds;
  return 0;
}

Ruled<int> fold_leaves(const Schedule& s, ItemKernel wide, ItemKernel narrow, int narrow_workers, int leaf_sms,
                        const DeviceLimits& device, bool inside, int cluster) {
  Inputs in;
  in("wide_kernel", kernel_name(wide))("dependent_launch", yes_no(device.dependent_launch))("leaf_sms", leaf_sms)(
      "cluster", cluster);
  auto no = [&](const std::string& why) { return ruled(0, "fold_leaves", "no", in, why); };
  if (inside && cluster > 1) {
    if (s.cluster_rows_fold(kFoldRounds)) {
      return ruled(kFoldRounds, "fold_leaves", "yes (in the clusters)", in,
                   "each cluster's leaf warps run its queries' leaves before its combine, which folds their rows: no "
                   "merge kernel");
    }
    return no("the leaves run inside the clusters, but some query's leaf rows are another cluster's or more than four");
  }
  if (inside) return no("the leaves run inside the wgmma blocks, before their rows are done");
  if (wide != ItemKernel::wgmma) return no("only after a wgmma launch");
  if (!s.gemm_chunks.empty()) return no("cuBLAS products write the workspace only");
  if (!device.dependent_launch) return no("the device has no programmatic dependent launch");
  if (leaf_sms > 0) return no("the leaves run beside, not after");
  const int rounds = fold_rounds(s, narrow);
  in("fold_rounds", rounds);
  if (rounds == 0) {
    return no("some query's rows are not one leaf row beside at most four others (two where a lane holds two leaf "
              "rows; eight in token_warps)");
  }
  const long long wide_blocks = static_cast<long long>(s.wide_items.size());
  const long long idle = list_schedule(item_lengths(s.wide_items), device.sms).idle_sm_tokens;
  const long long narrow_blocks = launch_blocks(narrow_workers, narrow);
  const long long free_sms = wide_blocks >= device.sms ? 0 : device.sms - wide_blocks;
  in("wide_blocks", wide_blocks)("idle_sm_tokens", idle)("narrow_blocks", narrow_blocks)("free_sms", free_sms);
  if (narrow_blocks <= free_sms * blocks_per_sm(narrow)) {
    return ruled(rounds, "fold_leaves", "yes", in, "every leaf block fits on the SMs the wgmma launch leaves");
  }
  if (idle <= kFoldForgoneSmTokens) return ruled(rounds, "fold_leaves", "yes", in, "the wgmma launch leaves little SM time idle");
  return no("folding leaf blocks would hold SMs idle waiting for the wgmma launch");
}

Ruled<bool> chain_leaves(const std::string& option, const Schedule& s, ItemKernel wide, bool fold, int leaf_sms,
                         const DeviceLimits& device, bool inside) {
  Inputs in;
  in("leaf_launch_option", option)("wide_kernel", kernel_name(wide))("dependent_launch", yes_no(device.dependent_launch))(
      "leaf_sms", leaf_sms);
  auto no = [&](const std::string& why) { return ruled(false, "chain_leaves", "no", in, why); };
  if (inside) return no("the leaves run inside the wgmma launch");
  if (s.wide_items.empty() || s.narrow_items.empty() || !s.gemm_chunks.empty()) return no("no wgmma launch and leaves to chain");
  if (wide != ItemKernel::wgmma) return no("only after a wgmma launch, whose blocks allow dependents as they start");
  if (fold) return no("the leaves fold: its dependent launch already");
  if (!device.dependent_launch) return no("the device has no programmatic dependent launch");
  if (option == "stream") return no("leaf_launch=stream");
  if (option == "chained") return ruled(true, "chain_leaves", "yes", in, "leaf_launch=chained");
  return ruled(true, "chain_leaves", "yes", in,
               leaf_sms > 0 ? "the persistent wgmma blocks placed first, the leaves' whole-SM blocks on the SMs they leave: "
                              "a side stream's leaves cost the decoder step 2% (perf-notes v33)"
                            : "the wgmma blocks placed before any leaf block takes an SM: a side stream's leaves cost "
                              "the decoder step 3% (perf-notes v32)");
}

Ruled<bool> leaf_evict_first(const std::string& option, const BlockCensus& c, const Schedule& s) {
  const bool once = c.narrow_read_once;
  Inputs in;
  in("leaf_l2_option", option)("narrow_items", s.narrow_items.size())("wide_items", s.wide_items.size())(
      "gemm_chunks", s.gemm_chunks.size())("narrow_read_once", yes_no(once));
  auto no = [&](const std::string& why) { return ruled(false, "leaf_evict_first", "no", in, why); };
  if (s.narrow_items.empty()) return no("no narrow items");
  if (option == "normal") return no("leaf_l2=normal");
  if (option == "evict_first") {
    return once ? ruled(true, "leaf_evict_first", "yes", in, "leaf_l2=evict_first")
                : no("leaf_l2=evict_first, but another row block reads some narrow block's K/V");
  }
  if (s.wide_items.empty() && s.gemm_chunks.empty()) return no("the narrow items alone: nothing else for L2 to keep");
  if (!once) return no("another row block reads some narrow block's K/V: L2 serves the second read");
  return ruled(true, "leaf_evict_first", "yes", in,
               "the leaves' K/V is read once: its lines leave L2 first, the shared K/V (kept last by the wgmma "
               "loads) and the partial rows stay; 0.92x-1.01x at the points with leaves (perf-notes v40)");
}

Ruled<bool> run_merge(const Schedule& s, bool fold) {
  const bool gemm = !s.gemm_chunks.empty(), needs = s.needs_merge();
  Inputs in;
  in("max_partials", s.max_partials())("gemm", yes_no(gemm))("fold", yes_no(fold));
  if (fold) return ruled(false, "merge", "no", in, "the leaves fold their queries' rows");
  if (gemm) return ruled(true, "merge", "yes", in, "cuBLAS rows are in the workspace");
  return ruled(needs, "merge", yes_no(needs), in,
               needs ? "some query has no partial row or several" : "every query's one row is written by its block");
}

Ruled<bool> overlap_merge(const std::string& option, const Schedule& s, ItemKernel wide, ItemKernel narrow,
                          const LaunchChoices& launches, const DeviceLimits& device, bool inside) {
  const bool has_wide = !s.wide_items.empty(), has_narrow = !s.narrow_items.empty(), gemm = !s.gemm_chunks.empty();
  Inputs in;
  in("merge_launch_option", option)("launches", has_wide + (has_narrow && !inside) + gemm)(
      "chain_leaves", yes_no(launches.chain_leaves))("dependent_launch", yes_no(device.dependent_launch));
  auto no = [&](const std::string& why) { return ruled(false, "overlap_merge", "no", in, why); };
  auto yes = [&](const std::string& why) { return ruled(true, "overlap_merge", "yes", in, why); };
  if (!launches.run_merge) return no("no merge kernel");
  if (!device.dependent_launch) return no("the device has no programmatic dependent launch");
  // The merge can depend on the launch before it only where that launch ends after everything else: one
  // launch, or the leaves chained after the wgmma launch (their last worker waits for it).
  const bool one_stream = !gemm && (!has_wide || !has_narrow || inside || launches.chain_leaves);
  if (!one_stream) return no("the merge waits in stream order for a second stream (beside, side by side, cuBLAS)");
  if (option == "stream") return no("merge_launch=stream");
  if (option == "dependent") return yes("merge_launch=dependent");
  if (launches.chain_leaves) {
    // A later part of a leaf starts past its token list's first position.
    const bool split = std::any_of(s.narrow_items.begin(), s.narrow_items.end(),
                                   [](const WorkItem& item) { return item.token_begin > 0; });
    in("leaves_split", yes_no(split));
    if (split) {
      return no("after chained leaves cut into parts the early merge ran 1.05x-1.06x ((32 and 256, 16384, 512), "
                "perf-notes v40)");
    }
    return yes("after chained leaves: the merge's launch and row tables while the leaves end, 0.94x-0.99x at the "
               "chained points (perf-notes v40)");
  }
  if (inside) return no("leaves inside: not measured as a dependent");
  const ItemKernel kernel = has_wide ? wide : narrow;
  const int blocks = launch_blocks(has_wide ? launches.wide_workers : launches.narrow_workers, kernel);
  const int resident = resident_blocks(kernel, device);
  in("blocks", blocks)("resident_blocks", resident);
  return blocks > 0 && 2 * blocks <= resident ? yes("the one launch leaves half the GPU idle")
                                              : no("the launch fills the GPU: overlapping cost time");
}

Ruled<NarrowProduct> narrow_product(const std::string& option, ItemKernel narrow, bool fold, const Schedule& s, bool inside) {
  int most = 0;
  for (const WorkItem& item : s.narrow_items) most = std::max(most, item.num_rows);
  Inputs in;
  in("narrow_product_option", option)("narrow_kernel", kernel_name(narrow))("most_narrow_rows", most)("fold", yes_no(fold));
  auto rows = [&](const std::string& why) {
    return ruled(NarrowProduct::rows, "narrow_product", "rows", in, option == "tokens" ? "narrow_product=tokens, but " + why : why);
  };
  if (inside) {
    if (option == "rows") {
      throw std::invalid_argument("cuda-hydragen: leaves=inside runs the token product (the rows product needs more registers "
                                  "than a wgmma block's leaf warps have); narrow_product=rows asks for the other");
    }
    if (most > kTokenProductRows) throw std::logic_error("leaves inside with an item of more than kTokenProductRows rows");
    return ruled(NarrowProduct::tokens, "narrow_product", "tokens", in,
                 "leaves inside the wgmma blocks: the token product fits their warps' 120 registers");
  }
  if (option == "rows") return rows("narrow_product=rows");
  if (narrow != ItemKernel::item_warps && narrow != ItemKernel::sm_item_warps) {
    return rows("the token product is the warp kernels' (item_warps, sm_item_warps)");
  }
  if (most > kTokenProductRows) {
    return rows("an item has " + std::to_string(most) + " rows: the token product holds " + std::to_string(kTokenProductRows));
  }
  if (option == "tokens") return ruled(NarrowProduct::tokens, "narrow_product", "tokens", in, "narrow_product=tokens");
  if (fold) return rows("the leaves fold: the token layout loads the wide rows in twice the instructions (up to 1.07x slower, perf-notes v33)");
  if (most > kTokenProductAutoRows) {
    return rows("items of " + std::to_string(most) + " rows: beside a wgmma launch the token product ran 0.92x-1.04x (perf-notes v33)");
  }
  return ruled(NarrowProduct::tokens, "narrow_product", "tokens", in,
               "items of at most " + std::to_string(kTokenProductAutoRows) +
                   " rows: O^T in a quarter of the registers, half the products (0.96x-1.00x, perf-notes v33)");
}

Ruled<int> wide_tile(const std::string& option, ItemKernel wide, const std::vector<long long>& items, bool inside) {
  const long long shortest = items.empty() ? 0 : *std::min_element(items.begin(), items.end());
  Inputs in;
  in("wide_tile_option", option)("kernel", kernel_name(wide))("wide_items", items.size())("shortest_item_tokens", shortest);
  const int small = kWgmmaTileTokens[0], large = kWgmmaTileTokens[1];
  // The option names the wgmma kernel's tile; a plan whose wide items run elsewhere (no sm_90a, mma64)
  // has no tile to set, and says so.
  if (wide != ItemKernel::wgmma) return ruled(small, "wide_tile", std::to_string(small), in, "no wgmma items: nothing to set");
  if (inside) {
    if (option == "192") {
      throw std::invalid_argument("cuda-hydragen: leaves=inside fits its leaf warps beside 128-token tiles only; wide_tile=192 asks "
                                  "for 192");
    }
    return ruled(small, "wide_tile", std::to_string(small), in,
                 "leaves inside: the leaf warps' stages fit beside 128-token tiles only");
  }
  if (option != "auto") return ruled(std::stoi(option), "wide_tile", option, in, "wide_tile=" + option);
  if (shortest >= kWideTileLongTokens) {
    return ruled(large, "wide_tile", std::to_string(large), in,
                 "every item at least " + std::to_string(kWideTileLongTokens) + " tokens: each turn's hand-off over 1.5x the work");
  }
  return ruled(small, "wide_tile", std::to_string(small), in,
               "an item under " + std::to_string(kWideTileLongTokens) + " tokens: longer tiles lengthen a short item's chain and its last tile's waste");
}

Ruled<int> part_merge(const std::string& option, ItemKernel wide, const BlockCensus& census, const BuildChoices& build,
                      const DeviceLimits& device, bool leaves_inside, bool leaves_fold) {
  std::set<long long> splits;
  std::set<const Group*> groups;
  for (const RowBlock& b : census.blocks) {
    if (!b.narrow()) groups.insert(b.group);
  }
  for (long long tokens : census.wide_block_tokens) {
    splits.insert(wide_split_count(tokens, build.wide_target_blocks, census.wide_tokens));
  }
  const long long parts = splits.size() == 1 ? *splits.begin() : 0;
  const long long blocks = parts * static_cast<long long>(census.wide_block_tokens.size());
  const int pair_blocks = device.sms - device.sms % 2;
  Inputs in;
  in("part_merge_option", option)("kernel", kernel_name(wide))("wide_blocks", census.wide_block_tokens.size())(
      "parts", splits.size() == 1 ? std::to_string(parts) : "mixed")("persistent", yes_no(build.wide_workers > 0))(
      "wide_groups", groups.size())("narrow_blocks", census.narrow_blocks)("leaves_inside", yes_no(leaves_inside))(
      "sms", device.sms);
  if (leaves_inside) in("leaves_fold", yes_no(leaves_fold));
  auto kernel = [&](const std::string& why) {
    return ruled(1, "part_merge", "kernel", in, option == "cluster" ? "part_merge=cluster, but " + why : why);
  };
  if (wide != ItemKernel::wgmma || census.wide_block_tokens.empty()) return kernel("no wgmma items");
  if (option == "kernel") return kernel("part_merge=kernel");
  if (parts < 2) {
    return kernel(splits.size() == 1 ? "the wide blocks are not split" : "the wide blocks are cut into different numbers of parts");
  }
  if (std::find(std::begin(kClusterParts), std::end(kClusterParts), parts) == std::end(kClusterParts)) {
    return kernel(std::to_string(parts) + " parts: a cluster is 2, 4 or 8 blocks");
  }
  if (build.wide_workers > 0) return kernel("persistent wgmma blocks run several row blocks' parts");
  if (option == "cluster") {
    return ruled(static_cast<int>(parts), "part_merge", "cluster of " + std::to_string(parts), in, "part_merge=cluster");
  }
  // Auto: where the combine replaces the merge kernel, and every cluster is placed in the first wave.
  if (parts != 2) {
    return kernel(std::to_string(parts) + " parts: clusters of 4 and 8 fit 120 blocks of an H100's 132 at once, and each "
                  "block's combine reads the others' rows in turn (perf-notes v38)");
  }
  if (blocks > pair_blocks) return kernel("more blocks than a wave of pairs: " + std::to_string(blocks));
  if ((census.narrow_blocks > 0 && !leaves_inside) || groups.size() > 1) {
    return kernel("other rows of the queries (leaves after, other segments) still go to the merge kernel: the combine "
                  "saves little ((1024, 16384, 64) 1.008x, perf-notes v38)");
  }
  if (census.narrow_blocks > 0) {
    if (!leaves_fold) {
      return kernel("the leaves' rows cannot fold in the pairs (a leaf's queries in two, or more than four rows a "
                    "query): the pairs would save little");
    }
    return ruled(2, "part_merge", "cluster of 2", in,
                 "a wave of block pairs with the leaves inside: each pair's combine folds its queries' leaf rows too, and no "
                 "merge kernel runs (fold_leaves; perf-notes v38)");
  }
  return ruled(2, "part_merge", "cluster of 2", in,
               "a wave of block pairs whose rows are their queries' only ones: the pair combines them on chip and no merge "
               "kernel runs (0.91x-0.97x, perf-notes v38)");
}

Ruled<int> merge_warps(const Schedule& s) {
  const int most = s.max_partials(), warps = most > kMergeSplitAbove ? kMergeWarps : 1;
  Inputs in;
  in("max_partials", most);
  return ruled(warps, "merge_warps", std::to_string(warps), in,
               warps > 1 ? "a query of more than 8 partials: four warps load its rows at once" : "a warp per query");
}

Ruled<LaunchRecipe> launch_recipe(const Schedule& s, const LaunchChoices& launches, int leaf_sms, bool inside) {
  const bool narrow = !s.narrow_items.empty(), wide = !s.wide_items.empty(), gemm = !s.gemm_chunks.empty();
  Inputs in;
  in("narrow_items", s.narrow_items.size())("wide_items", s.wide_items.size())("gemm_chunks", s.gemm_chunks.size())(
      "fold", yes_no(launches.folds()))("leaf_sms", leaf_sms)("chain_leaves", yes_no(launches.chain_leaves));
  LaunchRecipe r = LaunchRecipe::one_launch;
  if (gemm) {
    r = LaunchRecipe::gemm_side_by_side;
  } else if (inside) {
    r = LaunchRecipe::leaves_inside;
  } else if (launches.folds()) {
    r = LaunchRecipe::folded_leaves;
  } else if (narrow && wide && launches.chain_leaves) {
    r = LaunchRecipe::chained_leaves;
  } else if (leaf_sms > 0) {
    r = LaunchRecipe::leaves_beside;
  } else if (narrow && wide) {
    r = LaunchRecipe::side_by_side;
  }
  return ruled(r, "launch_recipe", recipe_name(r), in, "from the items and the choices above");
}

}  // namespace hydragen::cuda
