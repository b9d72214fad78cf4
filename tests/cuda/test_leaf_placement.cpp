// cuda-hydragen's choice between leaves after the wgmma launch and leaves beside it
// (leaf_placement.hpp), on the H100's points of perf-notes v19. Host only.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "leaf_placement.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {
namespace {

struct Point {
  int batch, prefix, suffix, q_heads, kv_heads, head_dim;
  const char* why;
};

LeafPlacement placement_at(const Point& p, bool force) {
  const AttentionShape shape = make_shape(p.batch, 1, p.q_heads, p.kv_heads, p.head_dim, DType::bf16);
  const SharingTree tree = SharingTree::prefix_suffix(p.prefix, std::vector<int>(p.batch, p.suffix));
  const ScheduleOptions h100 = ScheduleOptions::for_device(132, ItemKernel::wgmma);
  return place_leaves(shape, tree, h100, segment_schedule(shape, tree, h100), force);
}

std::string describe(const Point& p, const LeafPlacement& l) {
  return "(" + std::to_string(p.batch) + ", " + std::to_string(p.prefix) + ", " + std::to_string(p.suffix) + "), " +
         std::to_string(p.q_heads) + "/" + std::to_string(p.kv_heads) + " heads, D " + std::to_string(p.head_dim) + ": " +
         p.why + "; after " + std::to_string(l.after_ns / 1000) + " us, beside " + std::to_string(l.beside_ns / 1000) + " us";
}

TEST(LeafPlacement, PutsTheLeavesBesideWhereTheyStreamMostOfTheBytesAndThePrefixPartsAreShort) {
  // Fig. 3b's TP-8 shard (5 heads, 40 row blocks of 16256 tokens): the H100 ran it beside at 0.90x
  // (leaves on 32 SMs, 80 wgmma blocks) and 0.82x with 128-token leaves.
  for (const Point& p : {Point{1024, 16256, 64, 5, 5, 128, "168 MB of leaves"}, Point{1024, 16256, 128, 5, 5, 128, "336 MB of leaves"}}) {
    const LeafPlacement l = placement_at(p, false);
    SCOPED_TRACE(describe(p, l));
    EXPECT_TRUE(l.beside);
    EXPECT_EQ(l.schedule.wide_items.size(), 80u) << "two parts per row block";
    EXPECT_LE(l.leaf_sms, 132 - 80);
    EXPECT_LT(l.beside_ns, kBesideMargin * l.after_ns);
  }
  // The leaves take the SMs that stream them within the wgmma launch's time, not every free one
  // (52 slowed the wgmma blocks: 0.98x against 0.90x on 32).
  EXPECT_EQ(placement_at({1024, 16256, 64, 5, 5, 128, ""}, false).leaf_sms, 34);
}

TEST(LeafPlacement, KeepsTheLeavesAfterWhereFewerPrefixPartsWouldOutlastThem) {
  // Beside lost at every layout the H100 tried at these (1.04x to 1.6x: perf-notes v19).
  for (const Point& p : {Point{256, 8192, 64, 32, 8, 128, "GQA 4: 67 MB of leaves, 64 row blocks"},
                         Point{1024, 16384, 64, 8, 1, 128, "34 MB of leaves beside a long prefix"},
                         Point{1024, 4096, 64, 8, 1, 128, "34 MB of leaves"},
                         Point{1024, 1024, 64, 5, 5, 128, "Fig. 3b's shard at P = 1024: the leaves are the time either way"},
                         Point{128, 1024, 64, 8, 1, 128, "a small problem"},
                         Point{256, 8192, 64, 32, 32, 128, "MHA, 32 heads: 402 MB from DRAM either way"},
                         Point{64, 8192, 64, 32, 32, 128, "MHA, 32 heads: the prefix's 134 MB from DRAM bound it"},
                         Point{256, 8192, 64, 40, 40, 128, "MHA, 40 heads: 503 MB from DRAM"}}) {
    const LeafPlacement l = placement_at(p, false);
    SCOPED_TRACE(describe(p, l));
    EXPECT_FALSE(l.beside);
    EXPECT_GT(l.beside_ns, kBesideMargin * l.after_ns);
  }
}

TEST(LeafPlacement, KeepsLeavesLongerThanTheMeasuredOnesAfterUnlessForced) {
  const Point p{1024, 8192, 512, 8, 1, 128, "512-token leaves: predicted faster beside, never measured there"};
  const LeafPlacement l = placement_at(p, false);
  SCOPED_TRACE(describe(p, l));
  EXPECT_LT(l.beside_ns, kBesideMargin * l.after_ns);
  EXPECT_FALSE(l.beside);
  EXPECT_TRUE(placement_at(p, true).beside);
}

TEST(LeafPlacement, ForcedTakesTheBestBesideLayoutWhereOneExists) {
  const Point gqa{256, 8192, 64, 32, 8, 128, "GQA 4, 64 row blocks: one part each leaves 68 SMs"};
  const LeafPlacement l = placement_at(gqa, true);
  SCOPED_TRACE(describe(gqa, l));
  EXPECT_TRUE(l.beside);
  EXPECT_EQ(l.schedule.wide_items.size(), 64u);

  const Point many{4096, 4096, 64, 8, 1, 128, "256 row blocks: no wgmma launch of fewer blocks than SMs"};
  const LeafPlacement none = placement_at(many, true);
  SCOPED_TRACE(describe(many, none));
  EXPECT_FALSE(none.beside);
  EXPECT_EQ(none.beside_ns, 0);
}

TEST(LeafPlacement, HasNothingToPlaceWithoutLeavesOrAWgmmaLaunch) {
  const Point no_leaves{1024, 16384, 0, 8, 1, 128, "no suffix"};
  EXPECT_FALSE(placement_at(no_leaves, true).beside);
  const Point no_wide{2, 1024, 64, 8, 1, 128, "16 query rows on the prefix: every item narrow"};
  EXPECT_FALSE(placement_at(no_wide, true).beside);
}

}  // namespace
}  // namespace hydragen::cuda
