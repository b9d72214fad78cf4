// Sharing trees by their shape (tree_spec.hpp): the one text `--tree` takes in hydragen-diff and
// hydragen-sweep and their outputs write, and the trees it builds: levels of equal groups under the
// prefix, consecutive sequences in each group; or no sharing at all.
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
  const SharingTree t = spec.build(4, 100, 7);
  EXPECT_EQ(t.num_segments(), 5);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(t.total_tokens(), 100 + 4 * 7);
  EXPECT_EQ(t.describe(), SharingTree::prefix_suffix(100, {7, 7, 7, 7}).describe());
}

TEST(TreeSpec, FlatSharesNothingNotEvenThePrefix) {
  const TreeSpec spec = TreeSpec::parse("flat");
  EXPECT_TRUE(spec.flat);
  EXPECT_TRUE(spec.levels.empty());
  const SharingTree t = spec.build(10, {1, 0, 5});
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{11, 10, 15}));
  EXPECT_EQ(t.depth(), 1);
  EXPECT_THAT([&] { spec.build(2147483647, {0, 1}); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("tree flat: P + S = 2147483647 + 1 exceeds int")));
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

TEST(TreeSpec, RaggedGroupsTakeTheMidpointsOfEqualBins) {
  const TreeSpec spec = TreeSpec::parse("8x300-800");
  std::vector<int> lengths;
  for (int g = 0; g < 8; ++g) lengths.push_back(spec.levels[0].length_of(g));
  EXPECT_EQ(lengths, (std::vector<int>{331, 393, 456, 518, 581, 643, 706, 768}));
  EXPECT_EQ(TreeSpec::parse("1x300-800").levels[0].length_of(0), 550);
  const SharingTree t = spec.build(16, 2400, 10);
  EXPECT_EQ(t.path_length(0), 2400 + 331 + 10);
  EXPECT_EQ(t.path_length(15), 2400 + 768 + 10);
}

TEST(TreeSpec, CopyMovesTheGroupsTokensIntoEveryLeaf) {
  const TreeSpec spec = TreeSpec::parse("copy:8x300-800");
  EXPECT_TRUE(spec.copied);
  const SharingTree shared = TreeSpec::parse("8x300-800").build(32, 2400, 10);
  const SharingTree copied = spec.build(32, 2400, 10);
  EXPECT_EQ(copied.depth(), 2) << "the prefix alone is shared";
  for (int s = 0; s < 32; ++s) EXPECT_EQ(copied.path_length(s), shared.path_length(s)) << s;
  EXPECT_EQ(copied.total_tokens() - shared.total_tokens(), 3LL * (331 + 393 + 456 + 518 + 581 + 643 + 706 + 768))
      << "each group's tokens stored by its 4 sequences instead of once";
  const SharingTree deep = TreeSpec::parse("copy:2x10/2x5").build(4, 100, 1);
  EXPECT_EQ(deep.path_length(3), 100 + 10 + 5 + 1);
}

TEST(TreeSpec, EachSequenceMayHaveItsOwnSuffixLength) {
  const SharingTree shared = TreeSpec::parse("2x8").build(100, {1, 2, 3, 4});
  EXPECT_EQ(shared.parents(), (std::vector<int>{-1, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(shared.lengths(), (std::vector<int>{100, 8, 8, 1, 2, 3, 4}));
  const SharingTree copied = TreeSpec::parse("copy:2x8").build(100, {1, 2, 3, 4});
  EXPECT_EQ(copied.lengths(), (std::vector<int>{100, 9, 10, 11, 12}));
  EXPECT_EQ(TreeSpec::parse("prefix").build(7, {0, 5}).lengths(), (std::vector<int>{7, 0, 5}));
}

TEST(TreeSpec, EmptySegmentsAreAllowed) {
  const SharingTree t = TreeSpec::parse("2x0/2x5").build(4, 0, 0);
  EXPECT_EQ(t.total_tokens(), 4 * 5);
}

TEST(TreeSpec, TextRoundTrips) {
  for (const char* text : {"prefix", "flat", "16x1024", "4x1024/4x256", "2x0/3x1/4x7", "8x300-800", "copy:16x1024", "copy:2x5/4x1-9"}) {
    EXPECT_EQ(TreeSpec::parse(text).text(), text);
    EXPECT_EQ(TreeSpec::parse(TreeSpec::parse(text).text()), TreeSpec::parse(text));
  }
}

TEST(TreeSpec, BadTextIsRejectedWithTheReason) {
  auto parse = [](const char* text) { return [text] { TreeSpec::parse(text); }; };
  EXPECT_THAT(parse(""), ThrowsMessage<std::invalid_argument>(HasSubstr("expected prefix, flat, or levels")));
  EXPECT_THAT(parse("copy:"), ThrowsMessage<std::invalid_argument>(HasSubstr("expected prefix, flat, or levels")));
  EXPECT_THAT(parse("8x800-300"), ThrowsMessage<std::invalid_argument>(HasSubstr("lengths 800-300 run backwards")));
  EXPECT_THAT(parse("8x300-"), ThrowsMessage<std::invalid_argument>(HasSubstr("length '' is not")));
  EXPECT_THAT(parse("radix"), ThrowsMessage<std::invalid_argument>(HasSubstr("tree 'radix': expected prefix, flat, or levels")));
  EXPECT_THAT(parse("copy:flat"), ThrowsMessage<std::invalid_argument>(HasSubstr("expected prefix, flat, or levels")));
  EXPECT_THAT(parse("flat/2x4"), ThrowsMessage<std::invalid_argument>(HasSubstr("expected prefix, flat, or levels")));
  EXPECT_THAT(parse("2x4/flat"), ThrowsMessage<std::invalid_argument>(HasSubstr("level 'flat' is not GROUPSxLENGTH")));
  EXPECT_THAT(parse("16x1024/"), ThrowsMessage<std::invalid_argument>(HasSubstr("level '' is not GROUPSxLENGTH")));
  EXPECT_THAT(parse("0x64"), ThrowsMessage<std::invalid_argument>(HasSubstr("group count '0' is not a positive integer")));
  EXPECT_THAT(parse("4x-1"), ThrowsMessage<std::invalid_argument>(HasSubstr("length '-1' is not a non-negative integer")));
  EXPECT_THAT(parse("4x64k"), ThrowsMessage<std::invalid_argument>(HasSubstr("length '64k'")));
  EXPECT_THAT(parse("4xx64"), ThrowsMessage<std::invalid_argument>(HasSubstr("length 'x64'")));
  EXPECT_THAT(parse("4/4x64"), ThrowsMessage<std::invalid_argument>(HasSubstr("level '4' is not GROUPSxLENGTH")));
}

// hydragen-diff's --tree took these words before the tools shared one grammar.
TEST(TreeSpec, EachRetiredWordSaysWhatToWriteInstead) {
  auto parse = [](const char* text) { return [text] { TreeSpec::parse(text); }; };
  EXPECT_THAT(parse("two-level"), ThrowsMessage<std::invalid_argument>(HasSubstr(
                                      "tree 'two-level': two-level is now GROUPSxLENGTH: 2x64 is 2 groups of 64 shared tokens")));
  EXPECT_THAT(parse("levels"), ThrowsMessage<std::invalid_argument>(
                                   HasSubstr("levels is gone: write the levels themselves, e.g. 4x1024/4x256")));
  EXPECT_THAT(parse("custom"), ThrowsMessage<std::invalid_argument>(
                                   HasSubstr("custom is gone: give --parents, --lengths and --leaves alone, without --tree")));
  EXPECT_THAT(parse("tokens"), ThrowsMessage<std::invalid_argument>(
                                   HasSubstr("tokens is gone: give --tokens FILE alone, without --tree")));
  EXPECT_THAT(parse("tokens:t.txt"), ThrowsMessage<std::invalid_argument>(HasSubstr("give --tokens FILE alone")));
}

TEST(TreeSpec, TheBatchMustFillEveryGroupEqually) {
  const TreeSpec spec = TreeSpec::parse("4x10/4x10");
  EXPECT_NO_THROW(spec.build(32, 1, 1));
  EXPECT_THAT([&] { spec.build(24, 1, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr(
                  "tree 4x10/4x10 splits the batch into 16 equal groups of consecutive sequences: B = 24 is not a "
                  "positive multiple of 16")));
  EXPECT_THAT([&] { spec.check_batch(0); }, ThrowsMessage<std::invalid_argument>(HasSubstr("B = 0 is not")));
  EXPECT_NO_THROW(TreeSpec::parse("flat").check_batch(5));
  EXPECT_THAT([] { TreeSpec::parse("100000x1/100000x1/100000x1/100000x1").build(64, 1, 1); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("B = 64 is not a positive multiple")));
}

}  // namespace
}  // namespace hydragen
