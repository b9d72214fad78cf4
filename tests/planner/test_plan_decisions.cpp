// A plan's record of its decisions (decision.hpp): every rule that fired, by name, with its inputs,
// its choice and why, as --explain prints it. Host only.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "plan_forms.hpp"
#include "planner.hpp"

namespace hydragen::cuda {
namespace {

const DeviceLimits kH100{132, true, true, "NVIDIA H100 80GB HBM3"};
const DeviceLimits kA100{108, false, false, "NVIDIA A100-SXM4-80GB"};

PlanOptions hydragen(const std::string& asked) {
  return resolve_options("cuda-hydragen", hydragen_options(), PlanOptions::parse(asked));
}

// One plan of each backend, on a shared prefix and on a flat batch, for both devices, with
// cuda-hydragen's forms: between them every rule fires.
std::vector<Planned> plans() {
  std::vector<Planned> out;
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  for (const SharingTree& tree :
       {SharingTree::prefix_suffix(4096, std::vector<int>(256, 256)), SharingTree::flat(std::vector<int>(256, 300))}) {
    for (const DeviceLimits& device : {kH100, kA100}) {
      out.push_back(plan_flash(shape, tree, resolve_options("cuda-flash", flash_options(), PlanOptions{}), device));
      for (const PlanOptions& variant : hydragen_variants()) {
        if (!device.wgmma && variant.has("leaves")) continue;  // beside needs a wgmma launch
        out.push_back(plan_hydragen(shape, tree, resolve_options("cuda-hydragen", hydragen_options(), variant), device));
      }
      out.push_back(plan_hydragen_cublas(shape, tree, device));
    }
  }
  return out;
}

TEST(PlanDecisions, EveryRuleInTheLogHasANameAChoiceAndAReason) {
  std::vector<std::string> fired;
  for (const Planned& p : plans()) {
    ASSERT_FALSE(p.decisions.log.empty());
    for (const Decision& d : p.decisions.log) {
      EXPECT_FALSE(d.rule.empty());
      EXPECT_FALSE(d.choice.empty()) << d.rule;
      EXPECT_FALSE(d.reason.empty()) << d.rule;
      EXPECT_FALSE(d.inputs.empty()) << d.rule;
      fired.push_back(d.rule);
    }
  }
  // docs/planner-rules.md's rules, each seen at least once.
  for (const char* rule : {"device", "wide_kernel", "inline_paths", "wide_target_blocks", "narrow_split", "form", "leaf_layout",
                           "narrow_kernel", "launch_workers", "fold_leaves", "narrow_product", "leaf_evict_first", "merge",
                           "overlap_merge", "merge_warps", "launch_recipe"}) {
    EXPECT_NE(std::find(fired.begin(), fired.end(), rule), fired.end()) << rule << " never fired";
  }
}

TEST(PlanDecisions, ExplainListsEachRuleByNameWithItsInputs) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(2048, std::vector<int>(1024, 320));
  const Planned p = plan_hydragen(shape, tree, hydragen("leaves=beside"), kH100);
  const std::string text = explain(p.decisions.log);
  std::size_t at = 0;
  for (const Decision& d : p.decisions.log) {
    // In order, one line each: "rule: choice -- reason [inputs]".
    const std::string line = d.rule + ": " + d.choice + " -- " + d.reason + " [" + d.inputs + "]\n";
    const std::size_t found = text.find(line, at);
    ASSERT_NE(found, std::string::npos) << "no line for rule " << d.rule << " after offset " << at << " in\n" << text;
    at = found + line.size();
  }
  EXPECT_EQ(at, text.size()) << "nothing but the decisions";
  EXPECT_EQ(text.rfind("device: NVIDIA H100 80GB HBM3", 0), 0u) << "the device first:\n" << text;
  EXPECT_NE(text.find("leaf_layout: beside"), std::string::npos) << text;
  EXPECT_NE(text.find("leaves_option=beside"), std::string::npos) << "the rule's inputs:\n" << text;
}

// Rule wide_tile: the 192-token tile where every wgmma item has at least kWideTileLongTokens tokens.
TEST(PlanDecisions, TakesThe192TokenTileWhereEveryWgmmaItemIsLong) {
  auto tile = [](int batch, int prefix, int suffix) {
    const SharingTree tree = SharingTree::prefix_suffix(prefix, std::vector<int>(batch, suffix));
    return plan_hydragen(make_shape(batch, 1, 8, 1, 128, DType::bf16), tree, hydragen(""), kH100).decisions.launches.wide_tile_tokens;
  };
  EXPECT_EQ(tile(4096, 3500, 0), 192) << "256 row blocks, an item of 3500 tokens each";
  EXPECT_EQ(tile(4096, 3072, 0), 192) << "at the bound";
  EXPECT_EQ(tile(4096, 2816, 0), 128) << "under it";
  EXPECT_EQ(tile(1024, 3500, 64), 128) << "64 row blocks cut in two: items of 1750 tokens";
  EXPECT_EQ(tile(4096, 16384, 0), 192);
}

TEST(PlanDecisions, WidePartsKeepTheLeavesAfterOrFixBesidesParts) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(2048, std::vector<int>(1024, 320));
  const std::string text = explain(plan_hydragen(shape, tree, hydragen("wide_parts=2"), kH100).decisions.log);
  EXPECT_NE(text.find("leaf_layout: after -- wide_parts=2 fixes the wide launch's parts"), std::string::npos) << text;
  EXPECT_NE(text.find("leaves_option=auto wide_parts=2"), std::string::npos) << "the option the user left, as left:\n" << text;
  // With leaves=beside the parts are the beside layout's (a knob for measuring it), the leaf SMs the model's.
  const Planned beside = plan_hydragen(shape, tree, hydragen("wide_parts=2:leaves=beside"), kH100);
  EXPECT_GT(beside.decisions.leaf_sms, 0);
  EXPECT_EQ(beside.schedule.wide_items.size(), 64u * 2) << "64 row blocks of two parts";
}

TEST(PlanDecisions, LeavesInsideRunInTheWgmmaBlocksOrSayWhyNot) {
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(1024, 64));
  const Planned p = plan_hydragen(make_shape(1024, 1, 8, 1, 128, DType::bf16), tree, hydragen("form=wide:leaves=inside"), kH100);
  EXPECT_EQ(p.decisions.recipe, LaunchRecipe::leaves_inside);
  EXPECT_EQ(p.decisions.build.wide_target_blocks, kH100.sms) << "a wave of wgmma blocks: the leaves share every one";
  EXPECT_EQ(p.decisions.launches.wide_tile_tokens, 128) << "the leaf warps' stages fit beside 128-token tiles only";
  EXPECT_EQ(p.decisions.launches.narrow_product, NarrowProduct::tokens);
  // Two parts a row block: the pairs' combine folds the leaves' rows (rule part_merge, fold_leaves).
  EXPECT_EQ(p.decisions.build.wide_cluster, 2);
  EXPECT_TRUE(p.decisions.launches.folds());
  EXPECT_FALSE(p.decisions.launches.run_merge);
  const Planned merged =
      plan_hydragen(make_shape(1024, 1, 8, 1, 128, DType::bf16), tree, hydragen("form=wide:leaves=inside:part_merge=kernel"), kH100);
  EXPECT_EQ(merged.decisions.recipe, LaunchRecipe::leaves_inside);
  EXPECT_TRUE(merged.decisions.launches.run_merge) << "the leaves end before the wgmma rows: the merge after";
  EXPECT_FALSE(merged.decisions.launches.folds());

  // Leaves of 16 rows (q_len 2, g = 8) are more than the token product holds: after, saying so.
  const Planned rows16 = plan_hydragen(make_shape(1024, 2, 8, 1, 128, DType::bf16), tree, hydragen("form=wide:leaves=inside"), kH100);
  EXPECT_NE(rows16.decisions.recipe, LaunchRecipe::leaves_inside);
  EXPECT_NE(explain(rows16.decisions.log).find("leaf_layout: after -- leaves=inside, but an item has 16 rows"), std::string::npos)
      << explain(rows16.decisions.log);
  EXPECT_THROW(plan_hydragen(make_shape(1024, 1, 8, 1, 128, DType::bf16), tree, hydragen("leaves=inside:wide_tile=192"), kH100),
               std::invalid_argument);
  EXPECT_THROW(plan_hydragen(make_shape(1024, 1, 8, 1, 128, DType::bf16), tree, hydragen("leaves=inside:narrow_product=rows"), kH100),
               std::invalid_argument);
}

TEST(PartMerge, PairsOfWgmmaBlocksShareTheirRowsWhereTheyAreTheirQueriesOnlyRows) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const Planned p = plan_hydragen(shape, SharingTree::prefix_suffix(16384, std::vector<int>(1024, 0)), hydragen(""), kH100);
  EXPECT_EQ(p.decisions.build.wide_cluster, 2) << explain(p.decisions.log);
  const Schedule& s = p.schedule;
  ASSERT_EQ(s.wide_items.size(), 128u);
  EXPECT_EQ(s.num_rows(), 1024 * 8) << "a row per query: the pair's parts share it";
  for (std::size_t i = 0; i < s.wide_items.size(); i += 2) {
    const WorkItem &a = s.wide_items[i], &b = s.wide_items[i + 1];
    EXPECT_EQ(a.first_row, b.first_row);
    EXPECT_EQ(a.num_rows, b.num_rows);
    EXPECT_EQ(a.token_end, b.token_begin) << "a cluster's blocks are one row block's parts, in order";
    EXPECT_EQ(b.token_end - a.token_begin, 16384);
  }
  EXPECT_FALSE(p.decisions.launches.run_merge) << "the pairs write O and LSE: no merge kernel";
  EXPECT_EQ(p.decisions.recipe, LaunchRecipe::one_launch);
}

TEST(PartMerge, AutoKeepsTheMergeKernelWhereClustersWouldNotAllFitOrTheQueriesHaveOtherRows) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree leaves = SharingTree::prefix_suffix(16384, std::vector<int>(1024, 64));
  const Planned after = plan_hydragen(shape, leaves, hydragen("form=wide:leaves=after"), kH100);
  EXPECT_EQ(after.decisions.build.wide_cluster, 1);
  EXPECT_NE(explain(after.decisions.log).find("part_merge: kernel -- other rows of the queries"), std::string::npos)
      << explain(after.decisions.log);
  // Forced, the leaves after keep two rows a query: the pair's and the leaf's, which the leaves fold
  // or the merge kernel merges.
  const Planned forced = plan_hydragen(shape, leaves, hydragen("form=wide:leaves=after:part_merge=cluster"), kH100);
  EXPECT_EQ(forced.decisions.build.wide_cluster, 2);
  EXPECT_EQ(forced.schedule.max_partials(), 2);
  EXPECT_TRUE(forced.schedule.cluster_leaf_items.empty()) << "leaves after: nothing to group by cluster";
  // Leaves inside: the pairs fold them (auto).
  const Planned inside = plan_hydragen(shape, leaves, hydragen(""), kH100);
  EXPECT_EQ(inside.decisions.build.wide_cluster, 2) << explain(inside.decisions.log);
  ASSERT_EQ(inside.schedule.cluster_leaf_items.size(), 65u);
  for (int c = 0; c <= 64; ++c) EXPECT_EQ(inside.schedule.cluster_leaf_items[c], 16 * c) << "16 sequences' leaves per pair";
  EXPECT_TRUE(inside.decisions.launches.folds());
  EXPECT_FALSE(inside.decisions.launches.run_merge);
  // Six query heads: 128-row blocks cut sequences in two, so a leaf's queries fall in two pairs and the
  // built schedule cannot fold them: auto rebuilds with rows per part and says why.
  const Planned straddled = plan_hydragen(make_shape(1024, 1, 6, 1, 128, DType::bf16), leaves, hydragen(""), kH100);
  EXPECT_TRUE(straddled.decisions.leaves_inside) << explain(straddled.decisions.log);
  EXPECT_EQ(straddled.decisions.build.wide_cluster, 1);
  EXPECT_TRUE(straddled.schedule.cluster_leaf_items.empty());
  EXPECT_TRUE(straddled.decisions.launches.run_merge);
  EXPECT_NE(explain(straddled.decisions.log).find("part_merge: kernel -- the leaves' rows cannot fold in the pairs"),
            std::string::npos)
      << explain(straddled.decisions.log);

  // B = 512: four parts a row block; clusters of 4 fit 120 blocks of the 132 at once.
  const AttentionShape half = make_shape(512, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(512, 0));
  const Planned four = plan_hydragen(half, tree, hydragen(""), kH100);
  EXPECT_EQ(four.decisions.build.wide_cluster, 1);
  EXPECT_NE(explain(four.decisions.log).find("part_merge: kernel -- 4 parts"), std::string::npos) << explain(four.decisions.log);
  EXPECT_EQ(plan_hydragen(half, tree, hydragen("part_merge=cluster"), kH100).decisions.build.wide_cluster, 4);
  EXPECT_EQ(plan_hydragen(shape, SharingTree::prefix_suffix(16384, std::vector<int>(1024, 0)), hydragen("part_merge=kernel"), kH100)
                .decisions.build.wide_cluster,
            1);
}

TEST(PartMerge, ClusterFallsBackToTheMergeKernelAndSaysWhy) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree prefix = SharingTree::prefix_suffix(16384, std::vector<int>(1024, 0));
  const Planned a100 = plan_hydragen(shape, prefix, hydragen("part_merge=cluster"), kA100);
  EXPECT_EQ(a100.decisions.build.wide_cluster, 1);
  EXPECT_NE(explain(a100.decisions.log).find("part_merge: kernel -- part_merge=cluster, but no wgmma items"), std::string::npos);
  const Planned whole = plan_hydragen(make_shape(2048, 1, 8, 1, 128, DType::bf16),
                                      SharingTree::prefix_suffix(16384, std::vector<int>(2048, 0)), hydragen("part_merge=cluster"), kH100);
  EXPECT_EQ(whole.decisions.build.wide_cluster, 1);
  EXPECT_NE(explain(whole.decisions.log).find("part_merge=cluster, but the wide blocks are not split"), std::string::npos)
      << explain(whole.decisions.log);
  const Planned beside = plan_hydragen(shape, SharingTree::prefix_suffix(16256, std::vector<int>(1024, 64)),
                                       hydragen("form=wide:leaves=beside:part_merge=cluster"), kH100);
  EXPECT_EQ(beside.decisions.build.wide_cluster, 1) << explain(beside.decisions.log);
}

// An option's values but auto, ascending.
std::vector<int> numeric_values(const std::string& option) {
  std::vector<int> values;
  for (const PlanOption& o : hydragen_options()) {
    if (o.name != option) continue;
    for (const std::string& v : o.values) {
      if (v != "auto") values.push_back(std::stoi(v));
    }
  }
  return values;
}

// tune=measure: the plans a GPU times, the model's first, each other one a distinct plan of options
// the caller left to auto.
TEST(TuneCandidates, AreTheModelsPlanThenEachDistinctPlanOfTheAutoOptions) {
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(256, 64));
  const std::vector<TuneCandidate> c = tune_candidates(shape, tree, hydragen("tune=measure"), kH100);
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0].label, "model");
  EXPECT_TRUE(runs_alike(c[0].planned.decisions, plan_hydragen(shape, tree, hydragen(""), kH100).decisions));
  bool after = false, beside = false, inside = false;
  for (std::size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i].options.at("tune"), "model") << c[i].label;
    for (std::size_t j = 0; j < i; ++j) {
      EXPECT_FALSE(runs_alike(c[i].planned.decisions, c[j].planned.decisions)) << c[i].label << " runs as " << c[j].label;
    }
    const PlanDecisions& d = c[i].planned.decisions;
    const Schedule& s = c[i].planned.schedule;
    after |= !s.wide_items.empty() && !s.narrow_items.empty() && d.leaf_sms == 0 && !d.leaves_inside;
    beside |= d.leaf_sms > 0;
    inside |= d.leaves_inside;
  }
  EXPECT_TRUE(after && beside && inside) << "each leaf layout is timed";
  // Beside at the option's two leaf SM counts below the model's sizing and two above, nearest first.
  int sized = 0;
  std::vector<int> others;
  for (const TuneCandidate& t : c) {
    if (t.planned.decisions.leaf_sms == 0) continue;
    if (t.options.at("leaf_sms") == "auto") {
      sized = t.planned.decisions.leaf_sms;
    } else {
      others.push_back(t.planned.decisions.leaf_sms);
    }
  }
  ASSERT_GT(sized, 0);
  const std::vector<int> values = numeric_values("leaf_sms");
  const auto first_above = std::upper_bound(values.begin(), values.end(), sized);
  const auto last_below = std::lower_bound(values.begin(), values.end(), sized);
  ASSERT_GE(last_below - values.begin(), 2) << "the test's point has two sizings below the model's " << sized;
  ASSERT_GE(values.end() - first_above, 2) << "and two above";
  EXPECT_EQ(others, (std::vector<int>{last_below[-1], last_below[-2], first_above[0], first_above[1]})) << "model's: " << sized;
}

// The wide launch's parts per row block: its items whose first rows are the same query's.
int parts_per_row_block(const Schedule& s) {
  std::map<int, int> items;
  int most = 0;
  for (const WorkItem& w : s.wide_items) most = std::max(most, ++items[s.row_query[static_cast<std::size_t>(w.first_row)]]);
  return most;
}

TEST(TuneCandidates, CutTheWideLaunchIntoTheOptionsPartsEitherSideOfTheModels) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(16384, std::vector<int>(1024, 64));
  const std::vector<TuneCandidate> c = tune_candidates(shape, tree, hydragen("tune=measure"), kH100);
  const int model = parts_per_row_block(c[0].planned.schedule);
  const std::vector<int> values = numeric_values("wide_parts");
  const auto above = std::upper_bound(values.begin(), values.end(), model);
  const auto below = std::lower_bound(values.begin(), values.end(), model);
  ASSERT_TRUE(below != values.begin() && above != values.end()) << "the test's point has parts either side of " << model;
  std::vector<int> timed;
  for (const TuneCandidate& t : c) {
    if (t.options.at("wide_parts") == "auto") continue;
    timed.push_back(std::stoi(t.options.at("wide_parts")));
    EXPECT_EQ(parts_per_row_block(t.planned.schedule), timed.back()) << t.label;
    EXPECT_EQ(t.planned.decisions.leaf_sms, 0) << t.label << ": the leaves after";
  }
  EXPECT_EQ(timed, (std::vector<int>{below[-1], *above})) << "model's: " << model;
}

TEST(TuneCandidates, LeaveTheOptionsTheCallerSetAsSet) {
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(256, 64));
  EXPECT_EQ(tune_candidates(shape, tree, hydragen("tune=measure:form=wide:leaves=after:wide_parts=2"), kH100).size(), 1u);
  for (const TuneCandidate& c : tune_candidates(shape, tree, hydragen("tune=measure:form=wide:leaves=after"), kH100)) {
    EXPECT_EQ(c.options.at("leaves"), "after") << c.label;
    EXPECT_TRUE(c.label == "model" || c.label.rfind("wide_parts=", 0) == 0) << c.label;
  }
  for (const TuneCandidate& c : tune_candidates(shape, tree, hydragen("tune=measure:form=wide:leaves=beside"), kH100)) {
    EXPECT_EQ(c.options.at("leaves"), "beside") << c.label;
    EXPECT_TRUE(c.label == "model" || c.label.rfind("leaf_sms=", 0) == 0 || c.label.rfind("wide_parts=", 0) == 0) << c.label;
  }
  // Where a layout is refused (beside without a wgmma launch) it is left out, not an error.
  for (const TuneCandidate& c : tune_candidates(shape, tree, hydragen("tune=measure"), kA100)) {
    EXPECT_EQ(c.planned.decisions.leaf_sms, 0) << c.label;
  }
}

TEST(TuneCandidates, ThePlanIsTheModelsItsLogEndingWithTheListATuneTimes) {
  const AttentionShape shape = make_shape(256, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(4096, std::vector<int>(256, 64));
  const Planned p = plan_hydragen(shape, tree, hydragen("tune=measure"), kH100);
  EXPECT_TRUE(runs_alike(p.decisions, plan_hydragen(shape, tree, hydragen(""), kH100).decisions));
  const Decision& tune = p.decisions.log.back();
  EXPECT_EQ(tune.rule, "tune");
  const std::size_t n = tune_candidates(shape, tree, hydragen("tune=measure"), kH100).size();
  EXPECT_EQ(tune.choice, "measure (" + std::to_string(n) + " plans)");
  EXPECT_NE(tune.reason.find("model, form="), std::string::npos) << tune.reason;
  const Planned fixed = plan_hydragen(shape, tree, hydragen("tune=measure:form=wide:leaves=after:wide_parts=2"), kH100);
  EXPECT_EQ(fixed.decisions.log.back().choice, "measure (1 plan)");
  EXPECT_EQ(plan_hydragen(shape, tree, hydragen(""), kH100).decisions.log.back().rule, "launch_recipe") << "tune=model logs no tune";
}

}  // namespace
}  // namespace hydragen::cuda
