// cuda-hydragen's choice between leaves after the wgmma launch and leaves beside it (rule
// leaf_layout, docs/planner-rules.md), on the H100's points of perf-notes v19-v21, and what a device
// without rates in device-rates.csv gets. Host only.
#include <gtest/gtest.h>

#include <cmath>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "hydragen/tree_spec.hpp"
#include "plan_forms.hpp"
#include "planner.hpp"
#include "rules.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {
namespace {

const DeviceLimits kH100{132, true, true, "NVIDIA H100 80GB HBM3"};

// leaf_layout's margin on the H100: device-rates.csv's beside_margin.
double h100_margin() { return device_rates(kH100.name).value().beside_margin; }

struct Point {
  int batch, prefix, suffix, q_heads, kv_heads, head_dim;
  const char* why;
};

// cuda-hydragen's plan at a point (leaves=auto, or beside: forced), and rule leaf_layout's layout
// with the times it predicted, the rule run again on what the plan gave it (the wide form's row
// blocks, the after layout's items: the plan keeps the times only in its decision's reason).
struct Placed {
  Planned plan;
  LeafLayout layout;
};

// cuda-hydragen's plan at a point under the options `asked`.
Planned plan_at(const Point& p, const std::string& asked, const TreeSpec& levels = {}, const DeviceLimits& device = kH100) {
  return plan_hydragen(make_shape(p.batch, 1, p.q_heads, p.kv_heads, p.head_dim, DType::bf16), levels.build(p.batch, p.prefix, p.suffix),
                       resolve_options("cuda-hydragen", hydragen_options(), PlanOptions::parse(asked)), device);
}

Placed placement_at(const Point& p, const std::string& leaves, const TreeSpec& levels = {}, const DeviceLimits& device = kH100) {
  const AttentionShape shape = make_shape(p.batch, 1, p.q_heads, p.kv_heads, p.head_dim, DType::bf16);
  const SharingTree tree = levels.build(p.batch, p.prefix, p.suffix);
  Placed placed{plan_at(p, "leaves=" + leaves, levels, device), {}};
  const std::vector<Group> groups = segment_groups(shape, tree, placed.plan.decisions.inline_paths);
  const BlockCensus c = census(shape, groups, kWgmmaRows);
  const BuildChoices after{kWgmmaRows, narrow_split(c, resident_blocks(ItemKernel::token_warps, device), device).choice,
                           wide_target_blocks(ItemKernel::wgmma, &c, shape, device_and_rates(device).choice, device).choice, 0, 0};
  placed.layout =
      leaf_layout(leaves, "auto", "auto", "auto", true, ItemKernel::wgmma, shape, c, item_lengths(c, after), device_and_rates(device).choice, device).choice;
  EXPECT_EQ(placed.layout.beside, placed.plan.decisions.leaf_sms > 0) << "the rule again decides as the plan did";
  return placed;
}

std::string describe(const Point& p, const LeafLayout& l) {
  return "(" + std::to_string(p.batch) + ", " + std::to_string(p.prefix) + ", " + std::to_string(p.suffix) + "), " +
         std::to_string(p.q_heads) + "/" + std::to_string(p.kv_heads) + " heads, D " + std::to_string(p.head_dim) + ": " +
         p.why + "; after " + std::to_string(l.after_ns / 1000) + " us, beside " + std::to_string(l.beside_ns / 1000) + " us";
}

// The persistent wgmma blocks' runs: W blocks of at most m parts each, every wide item in one run,
// beside the leaves' SMs.
void expect_runs(const Planned& p) {
  const std::vector<int>& runs = p.schedule.wide_worker_items;
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs.front(), 0);
  EXPECT_EQ(runs.back(), static_cast<int>(p.schedule.wide_items.size()));
  for (std::size_t w = 0; w + 1 < runs.size(); ++w) {
    EXPECT_GE(runs[w + 1] - runs[w], 1);
    EXPECT_LE(runs[w + 1] - runs[w], kMaxPartsPerWorker);
  }
  EXPECT_LE(static_cast<int>(runs.size()) - 1 + p.decisions.leaf_sms, 132) << "wgmma blocks and leaf blocks side by side";
  EXPECT_EQ(p.decisions.launches.wide_workers, static_cast<int>(runs.size()) - 1);
  EXPECT_EQ(p.decisions.narrow_kernel, ItemKernel::sm_item_warps);
  EXPECT_EQ(p.decisions.recipe, LaunchRecipe::chained_leaves) << "the persistent wgmma blocks placed first (rule chain_leaves)";
}

TEST(LeafPlacement, PutsTheLeavesBesideWhereTheyStreamBesideAComputeBoundPrefix) {
  // Measured beside / after on the H100 (perf-notes v20, v21): Fig. 3b's TP-8 shard 0.85 and 0.81,
  // the grid's long leaves 0.72 to 0.84, GQA 4 with a short prefix 0.83, 320-token leaves 0.945.
  for (const Point& p : {Point{1024, 16256, 64, 5, 5, 128, "Fig. 3b's shard: 168 MB of leaves"},
                         Point{1024, 16256, 128, 5, 5, 128, "Fig. 3b's shard: 336 MB of leaves"},
                         Point{256, 16384, 512, 8, 1, 128, "512-token leaves beside a long prefix"},
                         Point{512, 4096, 256, 8, 1, 128, "256-token leaves"},
                         Point{1024, 2048, 128, 8, 1, 128, "128-token leaves beside a short prefix"},
                         Point{1024, 2048, 320, 8, 1, 128, "320-token leaves beside a short prefix"},
                         Point{256, 2048, 64, 32, 8, 128, "GQA 4, a short prefix"}}) {
    const Placed l = placement_at(p, "auto");
    SCOPED_TRACE(describe(p, l.layout));
    EXPECT_TRUE(l.layout.beside);
    EXPECT_LT(l.layout.beside_ns, h100_margin() * l.layout.after_ns);
    expect_runs(l.plan);
  }
}

TEST(LeafPlacement, TakesFewPartsPerWgmmaBlock) {
  // Fig. 3b's shard (40 row blocks of 16256 tokens): five parts each, two to a block on 100 SMs, ran
  // 0.118 ms; sixteen parts, seven to a block on 92, 0.165 (each move to a part cost ~9 us).
  const Point p{1024, 16256, 64, 5, 5, 128, ""};
  const Placed l = placement_at(p, "auto");
  SCOPED_TRACE(describe(p, l.layout));
  EXPECT_EQ(l.plan.schedule.wide_items.size(), 200u);
  EXPECT_EQ(l.plan.schedule.wide_worker_items.size(), 101u);
  EXPECT_EQ(l.plan.decisions.leaf_sms, 32) << "the SMs that stream the leaves within the wgmma launch's time, not all 32 left";
}

TEST(LeafPlacement, KeepsTheLeavesAfterWhereBesideLost) {
  // Beside lost at these on the H100 (perf-notes v19, v20): the prefix's parts on fewer SMs
  // outlast the leaves (GQA 4 and one KV head with long prefixes: 1.03x to 1.5x), DRAM bounds both
  // layouts (MHA: 1.03x to 1.6x), or the leaves are the time either way and stream slower on some
  // SMs than on all (1.01x to 1.04x).
  for (const Point& p : {Point{256, 8192, 64, 32, 8, 128, "GQA 4: 67 MB of leaves, a long prefix"},
                         Point{1024, 4096, 64, 8, 1, 128, "34 MB of leaves"},
                         Point{1024, 1024, 64, 5, 5, 128, "Fig. 3b's shard at P = 1024: the leaves are the time either way"},
                         Point{128, 1024, 64, 8, 1, 128, "a small problem"},
                         Point{256, 8192, 64, 32, 32, 128, "MHA, 32 heads: 402 MB from DRAM either way"},
                         Point{256, 8192, 64, 40, 40, 128, "MHA, 40 heads: 503 MB from DRAM"},
                         Point{256, 8192, 64, 32, 32, 64, "MHA, D = 64"},
                         Point{1024, 2048, 512, 8, 1, 128, "268 MB of leaves beside 1 MB of prefix"}}) {
    const Placed l = placement_at(p, "auto");
    SCOPED_TRACE(describe(p, l.layout));
    EXPECT_FALSE(l.layout.beside);
    EXPECT_GT(l.layout.beside_ns, h100_margin() * l.layout.after_ns);
    EXPECT_EQ(l.plan.decisions.leaf_sms, 0);
  }
}

TEST(LeafPlacement, RunsFewLeavesInsideTheWgmmaBlocksBesideALongPrefix) {
  // Inside against the layout before it, on the H100 (perf-notes v37, v41): faster where a leaf warp
  // has under a fifth of an SM's wgmma tiles in leaf tiles, or, with 8-row leaves beside one prefix,
  // under three fifths; mixed at two thirds, slower with fewer rows a leaf or over short parts.
  const std::vector<std::pair<Point, bool>> expected = {
      {Point{1024, 16384, 64, 8, 1, 128, "34 MB of leaves beside a long prefix: 0.958x"}, true},
      {Point{256, 16384, 64, 8, 1, 128, "0.819x"}, true},
      {Point{4096, 16384, 64, 8, 1, 128, "134 MB beside a longer one: 0.986x"}, true},
      {Point{1024, 8192, 64, 8, 1, 128, "8-row leaves at a share of 0.33: 0.864x"}, true},
      {Point{4096, 8192, 96, 8, 1, 128, "8-row leaves at 0.5: 0.933x"}, true},
      {Point{64, 16384, 64, 8, 1, 128, "a wave's parts of 496 tokens: 1.148x"}, false},
      {Point{2048, 8192, 128, 8, 1, 128, "8-row leaves at 0.67: 0.98x (v37: 1.016x)"}, false},
      {Point{4096, 4096, 64, 8, 1, 128, "8-row leaves at 0.67: 1.056x (v37: 1.083x)"}, false},
      {Point{256, 8192, 64, 32, 8, 128, "GQA 4: 1.012x"}, false},
      {Point{1024, 16256, 64, 5, 5, 128, "the decoder's one-row leaves: 1.249x"}, false}};
  for (const auto& [p, inside] : expected) {
    const Placed l = placement_at(p, "auto");
    SCOPED_TRACE(describe(p, l.layout));
    EXPECT_EQ(l.layout.inside, inside);
    EXPECT_EQ(l.plan.decisions.recipe == LaunchRecipe::leaves_inside, inside);
  }
  // A tree's row blocks of two lengths keep the lower bound: at a share of 0.53, inside ran 1.035x.
  const Point tree{1024, 4096, 64, 8, 1, 128, "16 groups of 1024 tokens below the prefix"};
  const Placed l = placement_at(tree, "auto", TreeSpec::parse("16x1024"));
  SCOPED_TRACE(describe(tree, l.layout));
  EXPECT_FALSE(l.layout.inside);
}

TEST(LeafPlacement, KeepsShortOneRowLeavesAfterThoughTheModelPredictsBesideFaster) {
  // MHA decoding (CodeLlama-13b's TP-2 shard: 20 heads; 40 heads at B = 256): leaves of one row and 16
  // tokens, which the model put beside, ran 1.27x-1.68x slower there than after on the H100
  // (docs/planner-rules.md: leaf_layout); at 64 tokens beside stays, 1.24x faster than after.
  for (const Point& p : {Point{1024, 16384, 16, 20, 20, 128, "0.531 ms beside, 0.422 after"},
                         Point{1024, 8192, 16, 20, 20, 128, "0.334 ms beside, 0.235 after"},
                         Point{256, 8192, 16, 40, 40, 128, "0.202 ms beside, 0.120 after"}}) {
    const Placed l = placement_at(p, "auto");
    SCOPED_TRACE(describe(p, l.layout));
    EXPECT_LT(l.layout.beside_ns, h100_margin() * l.layout.after_ns) << "the model alone would take beside";
    EXPECT_EQ(l.plan.decisions.leaf_sms, 0);
    bool named = false;
    for (const Decision& d : l.plan.decisions.log) named |= d.rule == "leaf_layout" && d.reason.find("one row") != std::string::npos;
    EXPECT_TRUE(named) << "the decision says why";
  }
  EXPECT_GT(placement_at(Point{1024, 16384, 64, 20, 20, 128, "0.399 ms beside, 0.495 after"}, "auto").plan.decisions.leaf_sms, 0);
}

TEST(LeafPlacement, TimesATreesUnevenWideItemsAsTheBlockSchedulerPlacesThem) {
  // The depth-3 tree 4x1024/4x256 under a 4096-token prefix, B = 1024: 64 row blocks each of 4096,
  // 1024 and 256 tokens, 192 blocks. After measured 0.0769 ms on the H100, beside 0.1024 (perf-notes
  // v21); "waves x longest item" predicted after at 139 us (two waves of the 4096-token item) and
  // chose beside. The blocks' list schedule ends with the longest item, 57 us, at 69 us in all.
  const Point p{1024, 4096, 64, 8, 1, 128, "4x1024/4x256: a long prefix beside short groups"};
  const Placed l = placement_at(p, "auto", TreeSpec::parse("4x1024/4x256"));
  SCOPED_TRACE(describe(p, l.layout));
  EXPECT_FALSE(l.layout.beside);
  EXPECT_NEAR(l.layout.after_ns, 76900, 0.15 * 76900) << "the measured after time";
  EXPECT_NEAR(l.layout.beside_ns, 102400, 0.15 * 102400) << "the measured beside time";
}

TEST(LeafPlacement, TakesItsMarginFromTheDevicesRates) {
  // Predicted 0.973 of after on the H100 and measured 0.972 (rule leaf_layout's margin points): the
  // H100's margin (0.97) keeps the leaves after; a calibration's, which measures none (1), takes beside.
  const Point p{1024, 2048, 400, 8, 1, 128, "400-token leaves beside a short prefix"};
  const Placed h100 = placement_at(p, "auto");
  SCOPED_TRACE(describe(p, h100.layout));
  EXPECT_EQ(h100_margin(), 0.97);
  EXPECT_FALSE(h100.layout.beside);
  EXPECT_GT(h100.layout.beside_ns, 0.97 * h100.layout.after_ns);
  EXPECT_LT(h100.layout.beside_ns, h100.layout.after_ns);
  DeviceLimits calibrated{132, true, true, "Imaginary GPU", device_rates(kH100.name)};
  calibrated.rates->beside_margin = unmeasured_rates().beside_margin;
  EXPECT_TRUE(placement_at(p, "auto", {}, calibrated).layout.beside);
}

TEST(LeafPlacement, KeepsLeavesLongerThanTheMeasuredOnesAfterUnlessForced) {
  const Point p{1024, 16384, 1024, 8, 1, 128, "1024-token leaves: predicted faster beside, never measured there"};
  const Placed l = placement_at(p, "auto");
  SCOPED_TRACE(describe(p, l.layout));
  EXPECT_LT(l.layout.beside_ns, h100_margin() * l.layout.after_ns);
  EXPECT_FALSE(l.layout.beside);
  const Placed forced = placement_at(p, "beside");
  EXPECT_TRUE(forced.layout.beside);
  expect_runs(forced.plan);
}

TEST(LeafPlacement, ForcedTakesTheBestBesideLayout) {
  for (const Point& p : {Point{256, 8192, 64, 32, 8, 128, "GQA 4, 64 row blocks"},
                         Point{4096, 4096, 64, 8, 1, 128, "256 row blocks: several parts to a block"}}) {
    const Placed l = placement_at(p, "beside");
    SCOPED_TRACE(describe(p, l.layout));
    EXPECT_TRUE(l.layout.beside);
    EXPECT_GT(l.layout.beside_ns, 0);
    expect_runs(l.plan);
  }
}

TEST(LeafPlacement, StreamsFewLeavesBesideAtTheirWarpsRate) {
  // 64 leaves, a warp each: however many leaf SMs they get, they stream at most as fast as 64 /
  // kLeafWarpsFillingAnSm SMs (on the H200, 20 leaf SMs for these ran 1.40x after, perf-notes v54).
  const Point p{64, 16384, 256, 8, 1, 128, "64 leaves of 256 tokens"};
  const Placed l = placement_at(p, "beside");
  SCOPED_TRACE(describe(p, l.layout));
  EXPECT_GT(l.plan.decisions.leaf_sms, 64 / kLeafWarpsFillingAnSm) << "more SMs than the leaves fill";
  const DeviceRates r = device_rates(kH100.name).value();
  const double leaf_bytes = 64.0 * 256 * (2 * 128 * 2);  // a token's K and V rows of 128 bf16, one KV head
  EXPECT_GE(l.layout.beside_ns, leaf_bytes / (64 / kLeafWarpsFillingAnSm * r.leaf_sm_bytes_per_ns) + r.merge_ns + r.fixed_ns);
  EXPECT_FALSE(placement_at(p, "auto").layout.beside);
}

// The decoder's MHA layer (B 1024, 5 heads, P 16256, S 64: 40 row blocks) planned on the H100 with `options`.
Planned decoder_layer_plan(const std::string& options) {
  const SharingTree tree = SharingTree::prefix_suffix(16256, std::vector<int>(1024, 64));
  return plan_hydragen(make_shape(1024, 1, 5, 5, 128, DType::bf16), tree,
                       resolve_options("cuda-hydragen", hydragen_options(), PlanOptions::parse(options)), kH100);
}

// The knobs for measuring beside: leaf_sms and wide_parts fix those, the model fits the rest to them.
TEST(LeafPlacement, BesideTakesTheLeafSmsAndPartsAskedFor) {
  const Planned sms = decoder_layer_plan("leaves=beside:leaf_sms=24");
  EXPECT_EQ(sms.decisions.leaf_sms, 24);
  expect_runs(sms);
  const Planned parts = decoder_layer_plan("leaves=beside:wide_parts=4");
  EXPECT_GT(parts.decisions.leaf_sms, 0);
  EXPECT_EQ(parts.schedule.wide_items.size(), 40u * 4) << "four parts of each row block";
  expect_runs(parts);
  const Planned both = decoder_layer_plan("leaves=beside:wide_parts=8:leaf_sms=32");
  EXPECT_EQ(both.decisions.leaf_sms, 32);
  EXPECT_EQ(both.schedule.wide_items.size(), 40u * 8);
  expect_runs(both);
}

TEST(LeafPlacement, RefusesBesideKnobsWithoutBesideOrWhereNothingFits) {
  auto refused = [](const std::string& options, const std::string& says) {
    try {
      decoder_layer_plan(options);
      ADD_FAILURE() << options << ": no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("leaf_sms=16", "needs leaves=beside");
  refused("leaves=after:leaf_sms=16", "needs leaves=beside");
  refused("leaves=beside:wide_parts=32:leaf_sms=96", "no beside layout of the 40 row blocks fits 132 SMs");
}

TEST(LeafPlacement, HasNothingToPlaceWithoutLeavesOrAWgmmaLaunch) {
  const Point no_leaves{1024, 16384, 0, 8, 1, 128, "no suffix"};
  EXPECT_FALSE(placement_at(no_leaves, "beside").layout.beside);
  const Point no_wide{2, 1024, 64, 8, 1, 128, "16 query rows on the prefix: every item narrow"};
  EXPECT_FALSE(placement_at(no_wide, "beside").layout.beside);
}

// Rule wide_target_blocks after rule leaf_layout: leaves of more rows after the launch get fewer parts
// where their items would not all fit on the SMs the wave leaves free, and their stream covers at least
// kAfterLeavesCover of a part's compute (perf-notes v61, v62).
std::string wide_target_reason(const Planned& plan) {
  std::string reason;
  for (const Decision& d : plan.decisions.log) {
    if (d.rule == "wide_target_blocks") reason = d.choice + " -- " + d.reason;
  }
  return reason;
}

TEST(LeafPlacement, LeavesAfterTheLaunchGetFewerPartsWhereTheyWouldNotFitBesideIt) {
  // 256 items of 128 tokens; a wave's 64 blocks leave 68 SMs, room for 204: two parts leave 100 (300).
  const Placed overflow = placement_at({256, 1024, 128, 8, 1, 128, "256 leaves beside a wave of 4 parts"}, "auto");
  EXPECT_FALSE(overflow.layout.beside);
  EXPECT_EQ(overflow.plan.schedule.wide_items.size(), 32u);
  EXPECT_NE(wide_target_reason(overflow.plan).find("fit on the other SMs only with fewer parts"), std::string::npos)
      << wide_target_reason(overflow.plan);
  // The same leaves with a stream that covers a whole part: one part.
  const Placed heavy = placement_at({256, 1024, 512, 8, 1, 128, "512-token leaves"}, "auto");
  EXPECT_EQ(heavy.plan.schedule.wide_items.size(), 16u);
  EXPECT_NE(wide_target_reason(heavy.plan).find("stream longer than a part computes"), std::string::npos)
      << wide_target_reason(heavy.plan);
  // 64-token leaves over a 2048-token prefix: their stream is under half a part; the half wave stays.
  const Placed short_leaves = placement_at({256, 2048, 64, 8, 1, 128, "short leaves"}, "auto");
  EXPECT_EQ(short_leaves.plan.schedule.wide_items.size(), 64u);
  EXPECT_NE(wide_target_reason(short_leaves.plan).find("half a wave"), std::string::npos) << wide_target_reason(short_leaves.plan);
  // 512 one-warp items (item_warps, 12 an SM) fit on the half wave's 68 free SMs: the half wave stays.
  const Placed fitting = placement_at({512, 1024, 272, 8, 1, 128, "one-warp leaf items"}, "auto");
  EXPECT_EQ(fitting.plan.schedule.wide_items.size(), 64u);
  // Forced parts are kept.
  const Planned forced = plan_at({256, 1024, 128, 8, 1, 128, "parts fixed"}, "wide_parts=4");
  EXPECT_EQ(forced.schedule.wide_items.size(), 64u);
}

// Rule leaf_layout's beside sizing: leaves of more rows on no more SMs than stream them at the beside
// DRAM rate (perf-notes v63); one-row leaves on as many as the model asks.
TEST(LeafPlacement, BesideGivesLeavesOfMoreRowsNoMoreSmsThanTheDramRateNeeds) {
  const DeviceRates r = device_rates(kH100.name).value();
  const int dram_sms = static_cast<int>(std::ceil(r.beside_leaf_dram_share * r.leaf_dram_bytes_per_ns / r.leaf_sm_bytes_per_ns));
  const Placed eight = placement_at({1024, 2048, 256, 8, 1, 128, "8-row leaves beside 64 wgmma blocks"}, "auto");
  ASSERT_TRUE(eight.layout.beside) << describe({1024, 2048, 256, 8, 1, 128, ""}, eight.layout);
  EXPECT_EQ(eight.layout.leaf_sms, dram_sms) << "the leaves' stream would ask for " << 132 - eight.layout.wide_workers;
  const Placed one = placement_at({1024, 4096, 80, 5, 5, 128, "one-row leaves (the decoder's)"}, "beside");
  EXPECT_GT(one.layout.leaf_sms, dram_sms);
}

// A device device-rates.csv does not name gets no H100 numbers: leaf_layout abstains (leaves after,
// the rate-free choice) where the H100 takes beside, and the plan is the H100's with leaves=after on the
// wave's two parts per row block (with rates, leaves after take one: rule wide_target_blocks).
TEST(LeafPlacement, AbstainsOnADeviceWithoutRates) {
  const Point p{1024, 2048, 320, 8, 1, 128, "320-token leaves beside a short prefix"};
  const DeviceLimits imaginary{132, true, true, "Imaginary GPU"};
  ASSERT_FALSE(device_rates(imaginary.name).has_value());
  ASSERT_TRUE(device_rates(kH100.name).has_value());
  EXPECT_TRUE(placement_at(p, "auto").layout.beside) << "the H100 at the same limits";
  const Placed l = placement_at(p, "auto", {}, imaginary);
  EXPECT_FALSE(l.layout.beside);
  EXPECT_EQ(l.layout.after_ns, 0) << "no times predicted";
  EXPECT_FALSE(l.plan.decisions.rates.has_value());
  Decision rule;
  for (const Decision& d : l.plan.decisions.log) {
    if (d.rule == "leaf_layout") rule = d;
  }
  EXPECT_EQ(rule.choice, "after");
  EXPECT_NE(rule.reason.find("device-rates.csv"), std::string::npos) << rule.reason;
  EXPECT_NE(rule.reason.find("Imaginary GPU"), std::string::npos) << rule.reason;
  const Planned after = plan_at(p, "leaves=after:wide_parts=2");
  EXPECT_EQ(l.plan.schedule.wide_items.size(), after.schedule.wide_items.size());
  EXPECT_EQ(l.plan.schedule.narrow_items.size(), after.schedule.narrow_items.size());
  EXPECT_EQ(l.plan.schedule.row_query, after.schedule.row_query);
  EXPECT_EQ(l.plan.decisions.recipe, after.decisions.recipe);
}

TEST(LeafPlacement, RefusesBesideOnADeviceWithoutRatesNamingIt) {
  const AttentionShape shape = make_shape(1024, 1, 8, 1, 128, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(2048, std::vector<int>(1024, 320));
  const PlanOptions beside = resolve_options("cuda-hydragen", hydragen_options(), PlanOptions::parse("leaves=beside"));
  try {
    plan_hydragen(shape, tree, beside, DeviceLimits{132, true, true, "Imaginary GPU"});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Imaginary GPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("device-rates.csv"), std::string::npos) << e.what();
  }
  EXPECT_GT(plan_hydragen(shape, tree, beside, kH100).decisions.leaf_sms, 0) << "the H100 has the rates";
}

}  // namespace
}  // namespace hydragen::cuda
