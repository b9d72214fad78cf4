// Sharing trees by their shape (tree_spec.hpp): the text `hydragen-sweep --tree` takes and its CSV
// writes, and the trees it builds: levels of equal groups under the prefix, consecutive sequences
// in each group.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hydragen/tree_spec.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(TreeSpec, PrefixIsTheOneLevelTreeOfTheSweep) {
  const TreeSpec spec = TreeSpec::parse("prefix");
  EXPECT_TRUE(spec.levels.empty());
  EXPECT_EQ(spec.depth(), 2);
  const SharingTree t = spec.build(4, 100, 7);
  EXPECT_EQ(t.num_segments(), 5);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(t.total_tokens(), 100 + 4 * 7);
  EXPECT_EQ(t.describe(), SharingTree::prefix_suffix(100, {7, 7, 7, 7}).describe());
}

TEST(TreeSpec, TwoLevelGroupsConsecutiveSequences) {
  const TreeSpec spec = TreeSpec::parse("2x30");
  ASSERT_EQ(spec.levels.size(), 1u);
  EXPECT_EQ(spec.levels[0].groups, 2);
  EXPECT_EQ(spec.levels[0].length, 30);
  const SharingTree t = spec.build(6, 100, 5);
  EXPECT_EQ(t.depth(), 3);
  EXPECT_EQ(t.num_segments(), 1 + 2 + 6);
  // Sequences 0-2 share group 1, 3-5 group 2.
  EXPECT_EQ(t.path(0), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(t.path(2), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(t.path(3), (std::vector<int>{0, 2, 6}));
  EXPECT_EQ(t.seqs_below(2), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(t.path_length(4), 100 + 30 + 5);
  EXPECT_EQ(t.total_tokens(), 100 + 2 * 30 + 6 * 5);
}

TEST(TreeSpec, DepthFourSplitsEachGroupAgain) {
  const TreeSpec spec = TreeSpec::parse("4x1024/4x256");
  EXPECT_EQ(spec.depth(), 4);
  EXPECT_EQ(spec.innermost_groups(), 16);
  const SharingTree t = spec.build(64, 4096, 64);
  EXPECT_EQ(t.depth(), 4);
  EXPECT_EQ(t.num_segments(), 1 + 4 + 16 + 64);
  EXPECT_EQ(t.total_tokens(), 4096 + 4 * 1024 + 16 * 256 + 64 * 64);
  for (int s = 0; s < 64; ++s) {
    ASSERT_EQ(t.path(s).size(), 4u);
    EXPECT_EQ(t.path(s)[1], 1 + s / 16) << "outer group of sequence " << s;
    EXPECT_EQ(t.path(s)[2], 5 + s / 4) << "inner group of sequence " << s;
    EXPECT_EQ(t.path_length(s), 4096 + 1024 + 256 + 64);
  }
}

TEST(TreeSpec, EmptySegmentsAreAllowed) {
  const SharingTree t = TreeSpec::parse("2x0/2x5").build(4, 0, 0);
  EXPECT_EQ(t.total_tokens(), 4 * 5);
}

TEST(TreeSpec, TextRoundTrips) {
  for (const char* text : {"prefix", "16x1024", "4x1024/4x256", "2x0/3x1/4x7"}) {
    EXPECT_EQ(TreeSpec::parse(text).text(), text);
    EXPECT_EQ(TreeSpec::parse(TreeSpec::parse(text).text()), TreeSpec::parse(text));
  }
}

TEST(TreeSpec, BadTextIsRejectedWithTheReason) {
  auto parse = [](const char* text) { return [text] { TreeSpec::parse(text); }; };
  EXPECT_THAT(parse(""), ThrowsMessage<std::invalid_argument>(HasSubstr("expected prefix or levels")));
  EXPECT_THAT(parse("flat"), ThrowsMessage<std::invalid_argument>(HasSubstr("level 'flat' is not GROUPSxLENGTH")));
  EXPECT_THAT(parse("16x1024/"), ThrowsMessage<std::invalid_argument>(HasSubstr("level '' is not GROUPSxLENGTH")));
  EXPECT_THAT(parse("0x64"), ThrowsMessage<std::invalid_argument>(HasSubstr("group count '0' is not a positive integer")));
  EXPECT_THAT(parse("4x-1"), ThrowsMessage<std::invalid_argument>(HasSubstr("length '-1' is not a non-negative integer")));
  EXPECT_THAT(parse("4x64k"), ThrowsMessage<std::invalid_argument>(HasSubstr("length '64k'")));
  EXPECT_THAT(parse("x64"), ThrowsMessage<std::invalid_argument>(HasSubstr("group count ''")));
}

TEST(TreeSpec, TheBatchMustFillEveryGroupEqually) {
  const TreeSpec spec = TreeSpec::parse("4x10/4x10");
  EXPECT_NO_THROW(spec.build(32, 1, 1));
  EXPECT_THAT([&] { spec.build(24, 1, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("B = 24 is not a positive multiple of 16")));
  EXPECT_THAT([] { TreeSpec::parse("100000x1/100000x1/100000x1/100000x1").build(64, 1, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("B = 64 is not a positive multiple")));
}

}  // namespace
}  // namespace hydragen
