#include "planner.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "hydragen/attention.hpp"
#include "plan_forms.hpp"
#include "rules.hpp"

namespace hydragen::cuda {

namespace {

// tune=measure's sizings of beside either side of the model's: the option leaf_sms's nearest values.
constexpr std::size_t kTuneLeafSmSteps = 2;

// tune=measure's cuts of the wide launch either side of the first wide plan's: the option wide_parts's nearest values.
constexpr std::size_t kTuneWidePartSteps = 1;

// The numeric values of option `name` nearest `value`: up to `steps` below it (nearest first), then up
// to `steps` above it (nearest first).
std::vector<int> option_steps(const std::string& name, int value, std::size_t steps) {
  std::vector<int> below, above;
  for (const PlanOption& o : hydragen_options()) {
    if (o.name != name) continue;
    for (const std::string& v : o.values) {
      if (v == "auto") continue;
      const int n = std::stoi(v);
      if (n < value) below.insert(below.begin(), n);
      if (n > value) above.push_back(n);
    }
  }
  below.resize(std::min(below.size(), steps));
  above.resize(std::min(above.size(), steps));
  below.insert(below.end(), above.begin(), above.end());
  return below;
}

// The most parts the wide launch cuts one row block into: its items whose first rows are the same
// query's (each part has partial rows of its own).
int wide_parts_of(const Schedule& s) {
  std::map<int, int> parts;  // first row's query -> items
  int most = 0;
  for (const WorkItem& w : s.wide_items) most = std::max(most, ++parts[s.row_query[static_cast<std::size_t>(w.first_row)]]);
  return most;
}

// Keeps each rule's decision and hands back its choice.
class Log {
 public:
  explicit Log(PlanDecisions& d) : d_(d) {}
  template <typename T>
  T operator()(Ruled<T> r) {
    d_.log.push_back(std::move(r.decision));
    return std::move(r.choice);
  }

 private:
  PlanDecisions& d_;
};

// `groups` cut into row blocks of at most max_rows (what build() cuts into items), and the narrow split for them.
struct Cut {
  BlockCensus census;
  Ruled<long long> narrow_split;
};
Cut cut(const AttentionShape& shape, const std::vector<Group>& groups, int max_rows, int narrow_slots, const DeviceLimits& device) {
  BlockCensus c = census(shape, groups, max_rows);
  Ruled<long long> split = narrow_split(c, narrow_slots, device);
  return {std::move(c), std::move(split)};
}

// The plan options the launches' rules read ("auto" where a backend has none).
struct LaunchOptions {
  std::string narrow_kernel = "auto", narrow_workers = "auto", wide_tile = "auto", leaf_launch = "auto";
  std::string narrow_product = "auto", merge_launch = "auto", leaf_l2 = "auto";
};

// The launches' rules, once the schedule is built.
void decide_launches(const AttentionShape& shape, const BlockCensus& census, const Schedule& s, const LaunchOptions& o,
                     PlanDecisions& d) {
  Log log(d);
  const bool alone = s.wide_items.empty() && s.gemm_chunks.empty();
  const std::vector<long long> narrow = item_lengths(s.narrow_items), wide = item_lengths(s.wide_items);
  const bool inside = d.leaves_inside;
  d.narrow_kernel = log(narrow_kernel(shape.dtype, o.narrow_kernel, d.leaf_sms, narrow, alone, d.device, inside));
  LaunchChoices& l = d.launches;
  const int runs = s.wide_worker_items.empty() ? 0 : static_cast<int>(s.wide_worker_items.size()) - 1;
  if (!s.wide_items.empty()) {
    l.wide_workers = log(launch_workers("wide", "auto", d.wide_kernel, shape.dtype, wide, d.leaf_sms, runs, d.device));
    l.wide_tile_tokens = log(wide_tile(o.wide_tile, d.wide_kernel, wide, inside));
  }
  if (!s.narrow_items.empty() && !inside) {  // inside: the wgmma blocks' leaf warps, an even share each
    l.narrow_workers =
        log(launch_workers("narrow", o.narrow_workers, d.narrow_kernel, shape.dtype, narrow, d.leaf_sms, 0, d.device));
  }
  l.fold_rounds = log(fold_leaves(s, d.wide_kernel, d.narrow_kernel, l.narrow_workers, d.leaf_sms, d.device, inside,
                                  d.build.wide_cluster));
  if (!s.narrow_items.empty()) {  // leaves inside fold nothing themselves: their clusters do
    l.narrow_product = log(narrow_product(o.narrow_product, d.narrow_kernel, l.folds() && !inside, s, inside));
  }
  l.chain_leaves = log(chain_leaves(o.leaf_launch, s, d.wide_kernel, l.folds(), d.leaf_sms, d.device, inside));
  l.leaf_evict_first = log(leaf_evict_first(o.leaf_l2, census, s));
  l.run_merge = log(run_merge(s, l.folds()));
  l.overlap_merge = log(overlap_merge(o.merge_launch, s, d.wide_kernel, d.narrow_kernel, l, d.device, inside));
  if (l.run_merge) l.merge_warps = log(merge_warps(s));
  d.recipe = log(launch_recipe(s, l, d.leaf_sms, inside));
}

PlanDecisions begin(const DeviceLimits& limits) {
  if (limits.sms < 1) throw std::invalid_argument("the planner's device has " + std::to_string(limits.sms) + " SMs; at least 1");
  PlanDecisions d;
  d.device = limits;
  d.rates = Log(d)(device_and_rates(limits));
  return d;
}

}  // namespace

Planned plan_flash(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options, const DeviceLimits& device) {
  validate_problem(shape, tree);
  Planned p{begin(device), {}};
  PlanDecisions& d = p.decisions;
  Log log(d);
  d.wide_kernel = log(wide_kernel(shape.dtype, false, true, device));
  const std::vector<Group> groups = path_groups(tree);
  d.build.max_rows = max_rows(d.wide_kernel);
  d.build.wide_target_blocks = log(wide_target_blocks(d.wide_kernel, nullptr, shape, d.rates, device));
  Cut c = cut(shape, groups, d.build.max_rows, resident_blocks(ItemKernel::token_warps, device), device);
  d.build.narrow_parts = log(std::move(c.narrow_split));
  p.schedule = build(shape, groups, c.census, d.build);
  decide_launches(shape, c.census, p.schedule, LaunchOptions{options.at("narrow_kernel")}, d);
  return p;
}

// The rest of a cuda-hydragen plan once its rows are cut (`chosen`: wide blocks beside leaves, or 16-row
// blocks alone): the wide launch's target, where the leaves run, the schedule and its launches.
void plan_cut(const AttentionShape& shape, const std::vector<Group>& groups, Cut chosen, const PlanOptions& options,
              Planned& p) {
  PlanDecisions& d = p.decisions;
  Log log(d);
  d.build.max_rows = chosen.census.max_rows;
  d.build.narrow_parts = chosen.narrow_split.choice;
  const Decision split = chosen.narrow_split.decision;
  const std::string& parts = options.at("wide_parts");
  d.build.wide_target_blocks =
      log(parts == "auto" ? wide_target_blocks(d.wide_kernel, &chosen.census, shape, d.rates, d.device)
                          : wide_parts_target(parts, static_cast<long long>(chosen.census.wide_block_tokens.size())));
  const ItemLengths after = item_lengths(chosen.census, d.build);
  const LeafLayout layout =
      log(leaf_layout(options.at("leaves"), parts, options.at("narrow_kernel"), options.at("leaf_sms"),
                      options.at("wide_tile") != "192" && options.at("narrow_product") != "rows", d.wide_kernel, shape,
                      chosen.census, after, d.rates, d.device));
  if (layout.beside) {
    // The wgmma launch on fewer persistent blocks: the narrow split for the leaves' SMs.
    d.build.wide_target_blocks = layout.wide_target_blocks;
    d.build.wide_workers = layout.wide_workers;
    d.leaf_sms = layout.leaf_sms;
    d.build.narrow_parts = log(narrow_split(chosen.census, (d.device.sms - layout.wide_workers) * kMmaBlocksPerSm, d.device));
  } else {
    if (layout.inside) {
      // The leaves share every wgmma block's SM: a wave of blocks, whatever leaves after would have asked.
      d.leaves_inside = true;
      if (parts == "auto") d.build.wide_target_blocks = log(wide_target_blocks(d.wide_kernel, nullptr, shape, d.rates, d.device));
    } else if (parts == "auto") {
      // The leaves after the launch: fewer parts where a wave of them would not fit beside it.
      Ruled<long long> after_target = wide_target_blocks(d.wide_kernel, &chosen.census, shape, d.rates, d.device, &after.narrow);
      if (after_target.choice != d.build.wide_target_blocks) d.build.wide_target_blocks = log(std::move(after_target));
    }
    d.log.push_back(split);
  }
  d.build.wide_cluster =
      log(part_merge(options.at("part_merge"), d.wide_kernel, chosen.census, d.build, d.device, d.leaves_inside));
  d.build.cluster_leaves = d.leaves_inside && d.build.wide_cluster > 1;
  p.schedule = build(shape, groups, chosen.census, d.build);
  if (d.build.cluster_leaves && options.at("part_merge") == "auto" && !p.schedule.cluster_rows_fold(kFoldRounds)) {
    // Auto took pairs for their combine to fold the leaves; where the built schedule cannot, the rule again
    // says why, and the schedule is rebuilt with rows per part.
    d.build.wide_cluster = log(
        part_merge(options.at("part_merge"), d.wide_kernel, chosen.census, d.build, d.device, d.leaves_inside, false));
    d.build.cluster_leaves = false;
    p.schedule = build(shape, groups, chosen.census, d.build);
  }
  decide_launches(shape, chosen.census, p.schedule,
                  LaunchOptions{options.at("narrow_kernel"), options.at("narrow_workers"), options.at("wide_tile"),
                                options.at("leaf_launch"), options.at("narrow_product"), options.at("merge_launch"),
                                options.at("leaf_l2")},
                  d);
}

namespace {

// cuda-hydragen's plan as the rules make it (the option tune aside).
Planned plan_by_rules(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                      const DeviceLimits& device) {
  validate_problem(shape, tree);
  Planned p{begin(device), {}};
  PlanDecisions& d = p.decisions;
  Log log(d);
  d.wide_kernel = log(wide_kernel(shape.dtype, options.at("wide_kernel") == "mma64", false, device));
  d.inline_paths = log(inline_paths(options.at("inline"), narrow_paths(shape, tree), shape.kv_heads, device));
  const std::vector<Group> groups = segment_groups(shape, tree, d.inline_paths);
  const int slots = resident_blocks(ItemKernel::token_warps, device);
  const std::string& form = options.at("form");
  if (form != "auto") {
    plan_cut(shape, groups, cut(shape, groups, form == "narrow" ? kNarrowRows : max_rows(d.wide_kernel), slots, device), options, p);
    return p;
  }
  // Auto: the wide form planned whole (rule form weighs its launches), then either it or the 16-row form.
  Planned wide = p;
  plan_cut(shape, groups, cut(shape, groups, max_rows(d.wide_kernel), slots, device), options, wide);
  Cut narrow = cut(shape, groups, kNarrowRows, slots, device);
  BuildChoices c{kNarrowRows, narrow.narrow_split.choice, 0, 0, 0};  // no wide blocks
  Ruled<bool> narrow_form = one_narrow_launch(wide.decisions.recipe, wide.decisions.launches.fold_rounds, narrow.census,
                                              item_lengths(narrow.census, c).narrow, device);
  if (!narrow_form.choice) {  // the wide form, its log with rule form where the forms part
    wide.decisions.log.insert(wide.decisions.log.begin() + static_cast<std::ptrdiff_t>(d.log.size()), std::move(narrow_form.decision));
    return wide;
  }
  log(std::move(narrow_form));
  plan_cut(shape, groups, std::move(narrow), options, p);
  return p;
}

// `options` with `name` set to `value`.
PlanOptions with(const PlanOptions& options, const std::string& name, const std::string& value) {
  PlanOptions out;
  for (const auto& [n, v] : options.items()) out.set(n, n == name ? value : v);
  return out;
}

}  // namespace

Planned plan_hydragen(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                      const DeviceLimits& device) {
  if (options.at("tune") != "measure") return plan_by_rules(shape, tree, options, device);
  std::vector<TuneCandidate> candidates = tune_candidates(shape, tree, options, device);
  const Decision tune = tune_decision(candidates);
  Planned p = std::move(candidates.front().planned);  // the model's, which the option tune does not change
  p.decisions.log.push_back(tune);
  return p;
}

std::vector<TuneCandidate> tune_candidates(const AttentionShape& shape, const SharingTree& tree, const PlanOptions& options,
                                           const DeviceLimits& device) {
  const PlanOptions base = with(options, "tune", "model");
  std::vector<TuneCandidate> out{{"model", base, plan_by_rules(shape, tree, base, device)}};
  auto add = [&](const std::vector<std::pair<std::string, std::string>>& set) {
    PlanOptions o = base;
    std::string label;
    for (const auto& [name, value] : set) {
      o = with(o, name, value);
      label += (label.empty() ? "" : ":") + name + "=" + value;
    }
    try {
      Planned p = plan_by_rules(shape, tree, o, device);
      for (const TuneCandidate& c : out) {
        if (runs_alike(c.planned.decisions, p.decisions)) return;
      }
      out.push_back({label, o, std::move(p)});
    } catch (const std::invalid_argument&) {
      // The rules refuse these options for this problem (e.g. beside with no leaves): nothing to time.
    }
  };
  const bool form_auto = options.at("form") == "auto";
  if (form_auto) {
    add({{"form", "wide"}});
    add({{"form", "narrow"}});
  }
  // The leaves' layouts are the wide form's: forced where the form is auto.
  std::vector<std::pair<std::string, std::string>> wide;
  if (form_auto) wide.push_back({"form", "wide"});
  if (options.at("form") != "narrow" && options.at("leaves") == "auto") {
    for (const char* layout : {"after", "beside", "inside"}) {
      auto set = wide;
      set.push_back({"leaves", layout});
      add(set);
    }
  }
  if (options.at("leaf_sms") == "auto" && (options.at("leaves") == "auto" || options.at("leaves") == "beside")) {
    // Beside's sizing at the option's two values either side of the model's (the first beside plan
    // listed): where one step beats the model's sizing, the next one often does too (v55).
    int sized = 0;
    for (const TuneCandidate& c : out) {
      if (c.planned.decisions.leaf_sms > 0) {
        sized = c.planned.decisions.leaf_sms;
        break;
      }
    }
    if (sized > 0) {
      for (int n : option_steps("leaf_sms", sized, kTuneLeafSmSteps)) {
        auto set = wide;
        if (options.at("leaves") == "auto") set.push_back({"leaves", "beside"});
        set.push_back({"leaf_sms", std::to_string(n)});
        add(set);
      }
    }
  }
  if (options.at("wide_parts") == "auto" && options.at("form") != "narrow") {
    // The wide launch's parts at the option's values either side of the first wide plan's (the
    // model's where it is wide), the leaves after: fewer parts leave SMs to the leaves from the start
    // and fold fewer rows, more parts fill the SMs (v57).
    int parts = 0;
    for (const TuneCandidate& c : out) {
      parts = wide_parts_of(c.planned.schedule);
      if (parts > 0) break;
    }
    if (parts > 0) {
      for (int n : option_steps("wide_parts", parts, kTuneWidePartSteps)) {
        auto set = wide;
        set.push_back({"wide_parts", std::to_string(n)});
        add(set);
      }
    }
  }
  return out;
}

Decision tune_decision(const std::vector<TuneCandidate>& candidates) {
  std::string labels;
  for (const TuneCandidate& c : candidates) labels += (labels.empty() ? "" : ", ") + c.label;
  return {"tune", "measure (" + std::to_string(candidates.size()) + (candidates.size() == 1 ? " plan)" : " plans)"),
          "candidates=" + std::to_string(candidates.size()),
          candidates.size() > 1 ? "on a GPU the plan times " + labels + " and keeps the fastest"
                                : "the options leave the model nothing to be measured against: its plan runs"};
}

Planned plan_hydragen_cublas(const AttentionShape& shape, const SharingTree& tree, const DeviceLimits& device) {
  validate_problem(shape, tree);
  Planned p{begin(device), {}};
  PlanDecisions& d = p.decisions;
  Log log(d);
  d.wide_kernel = log(wide_kernel(shape.dtype, false, false, device));
  std::vector<Group> groups = segment_groups(shape, tree, false);
  for (Group& grp : groups) grp.gemm = grp.seqs.size() > 1;  // every shared segment as cuBLAS products
  d.build.max_rows = max_rows(d.wide_kernel);
  d.build.max_chunk_scores = kMaxChunkScores;
  d.build.wide_target_blocks = log(wide_target_blocks(d.wide_kernel, nullptr, shape, d.rates, device));
  Cut c = cut(shape, groups, d.build.max_rows, resident_blocks(ItemKernel::token_warps, device), device);
  d.build.narrow_parts = log(std::move(c.narrow_split));
  p.schedule = build(shape, groups, c.census, d.build);
  decide_launches(shape, c.census, p.schedule, LaunchOptions{}, d);
  return p;
}

}  // namespace hydragen::cuda
