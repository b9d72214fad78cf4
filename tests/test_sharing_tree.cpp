// sharing_tree.hpp: the builders give the intended forest, its derived tables (paths, path lengths,
// sequences below each segment, depth) are right, and every invalid input is rejected with a
// std::invalid_argument naming the offending field and value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "hydragen/sharing_tree.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Ints = std::vector<int>;

// Segment lengths along a sequence's path: independent of how a builder numbers its segments.
Ints path_lengths_of(const SharingTree& t, int seq) {
  Ints out;
  for (int seg : t.path(seq)) out.push_back(t.length(seg));
  return out;
}

// ---- builders ------------------------------------------------------------------------------------

TEST(SharingTreeFlat, EachSequenceOwnsOneSegment) {
  const SharingTree t = SharingTree::flat({3, 0, 5});
  EXPECT_EQ(t.num_segments(), 3);
  EXPECT_EQ(t.num_seqs(), 3);
  EXPECT_EQ(t.depth(), 1);
  EXPECT_EQ(t.total_tokens(), 8);
  for (int s = 0; s < 3; ++s) {
    EXPECT_THAT(t.path(s), ElementsAre(t.leaf(s)));
    EXPECT_THAT(t.seqs_below(t.leaf(s)), ElementsAre(s));
    EXPECT_EQ(t.parent(t.leaf(s)), -1);
    EXPECT_TRUE(t.is_leaf(t.leaf(s)));
  }
  EXPECT_EQ(t.path_length(0), 3);
  EXPECT_EQ(t.path_length(1), 0);
  EXPECT_EQ(t.path_length(2), 5);
}

TEST(SharingTreePrefixSuffix, EverySequenceSharesTheOnePrefix) {
  const SharingTree t = SharingTree::prefix_suffix(10, {1, 0, 3});
  EXPECT_EQ(t.num_segments(), 4);
  EXPECT_EQ(t.num_seqs(), 3);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(t.total_tokens(), 14);
  EXPECT_THAT(path_lengths_of(t, 0), ElementsAre(10, 1));
  EXPECT_THAT(path_lengths_of(t, 1), ElementsAre(10, 0));
  EXPECT_THAT(path_lengths_of(t, 2), ElementsAre(10, 3));
  const int prefix = t.path(0)[0];
  EXPECT_EQ(t.path(1)[0], prefix);
  EXPECT_EQ(t.path(2)[0], prefix);
  EXPECT_EQ(t.parent(prefix), -1);
  EXPECT_THAT(t.seqs_below(prefix), ElementsAre(0, 1, 2));
  EXPECT_EQ(t.children(prefix).size(), 3u);
  EXPECT_EQ(t.path_length(0), 11);
  EXPECT_EQ(t.path_length(1), 10);
  EXPECT_EQ(t.path_length(2), 13);
}

TEST(SharingTreeTwoLevel, GroupsShareTheRootAndTheirOwnMiddleSegment) {
  const SharingTree t = SharingTree::two_level(100, {10, 20}, {{1, 2}, {3}});
  EXPECT_EQ(t.num_segments(), 6);  // root, 2 groups, 3 suffixes
  EXPECT_EQ(t.num_seqs(), 3);
  EXPECT_EQ(t.depth(), 3);
  EXPECT_EQ(t.total_tokens(), 136);
  EXPECT_THAT(path_lengths_of(t, 0), ElementsAre(100, 10, 1));
  EXPECT_THAT(path_lengths_of(t, 1), ElementsAre(100, 10, 2));
  EXPECT_THAT(path_lengths_of(t, 2), ElementsAre(100, 20, 3));
  EXPECT_EQ(t.path(0)[1], t.path(1)[1]);  // same group segment
  EXPECT_NE(t.path(0)[1], t.path(2)[1]);
  EXPECT_THAT(t.seqs_below(t.path(0)[0]), ElementsAre(0, 1, 2));
  EXPECT_THAT(t.seqs_below(t.path(0)[1]), ElementsAre(0, 1));
  EXPECT_THAT(t.seqs_below(t.path(2)[1]), ElementsAre(2));
  EXPECT_EQ(t.path_length(2), 123);
}

TEST(SharingTreeTwoLevel, GroupAndSuffixListsMustHaveTheSameLength) {
  EXPECT_THAT([] { SharingTree::two_level(8, {1, 2}, {{1}}); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("group_lens has 2"), HasSubstr("suffix_lens has 1"))));
}

// A forest: root 0 with uneven fan-out (3 below segment 1, 1 below segment 2, segment 3 a leaf at
// depth 2), and a separate root 8. Sequences list their leaves out of segment order.
SharingTree uneven_forest() {
  //                  0   1  2  3  4  5  6  7   8
  return SharingTree::from_parents({-1, 0, 0, 0, 1, 1, 1, 2, -1}, {90, 30, 12, 8, 4, 0, 19, 6, 25},
                                   {5, 3, 7, 4, 8, 6});
}

TEST(SharingTreeFromParents, PathsRunFromTheRootToEachSequencesLeaf) {
  const SharingTree t = uneven_forest();
  EXPECT_EQ(t.num_segments(), 9);
  EXPECT_EQ(t.num_seqs(), 6);
  EXPECT_EQ(t.depth(), 3);
  EXPECT_EQ(t.total_tokens(), 194);
  EXPECT_THAT(t.path(0), ElementsAre(0, 1, 5));
  EXPECT_THAT(t.path(1), ElementsAre(0, 3));
  EXPECT_THAT(t.path(2), ElementsAre(0, 2, 7));
  EXPECT_THAT(t.path(3), ElementsAre(0, 1, 4));
  EXPECT_THAT(t.path(4), ElementsAre(8));
  EXPECT_THAT(t.path(5), ElementsAre(0, 1, 6));
  const std::vector<long long> expected_lengths = {90 + 30 + 0, 90 + 8, 90 + 12 + 6, 90 + 30 + 4, 25, 90 + 30 + 19};
  for (int s = 0; s < 6; ++s) EXPECT_EQ(t.path_length(s), expected_lengths[s]) << "sequence " << s;
}

TEST(SharingTreeFromParents, GivesBackItsTables) {
  const SharingTree t = uneven_forest();
  EXPECT_THAT(t.parents(), ElementsAre(-1, 0, 0, 0, 1, 1, 1, 2, -1));
  EXPECT_THAT(t.lengths(), ElementsAre(90, 30, 12, 8, 4, 0, 19, 6, 25));
  EXPECT_THAT(t.seq_leaves(), ElementsAre(5, 3, 7, 4, 8, 6));
}

TEST(SharingTreeFromParents, SeqsBelowListsEverySequenceThroughASegmentAscending) {
  const SharingTree t = uneven_forest();
  EXPECT_THAT(t.seqs_below(0), ElementsAre(0, 1, 2, 3, 5));
  EXPECT_THAT(t.seqs_below(1), ElementsAre(0, 3, 5));
  EXPECT_THAT(t.seqs_below(2), ElementsAre(2));
  EXPECT_THAT(t.seqs_below(8), ElementsAre(4));
  EXPECT_THAT(t.seqs_below(5), ElementsAre(0));
}

TEST(SharingTreeFromParents, ChildrenAndLeavesFollowTheParentTable) {
  const SharingTree t = uneven_forest();
  EXPECT_THAT(t.children(0), ElementsAre(1, 2, 3));
  EXPECT_THAT(t.children(1), ElementsAre(4, 5, 6));
  EXPECT_THAT(t.children(2), ElementsAre(7));
  EXPECT_FALSE(t.is_leaf(0));
  EXPECT_TRUE(t.is_leaf(3));
  EXPECT_TRUE(t.is_leaf(8));
  EXPECT_EQ(t.parent(7), 2);
  EXPECT_EQ(t.leaf(2), 7);
}

TEST(SharingTreeFromParents, ParentsMayBeListedAfterTheirChildren) {
  // Segment 0 is a leaf whose parent (2) has a higher index; 2's parent is 1, a root.
  const SharingTree t = SharingTree::from_parents({2, -1, 1, 2}, {5, 7, 3, 1}, {3, 0});
  EXPECT_THAT(t.path(0), ElementsAre(1, 2, 3));
  EXPECT_THAT(t.path(1), ElementsAre(1, 2, 0));
  EXPECT_EQ(t.path_length(1), 15);
  EXPECT_EQ(t.depth(), 3);
  EXPECT_THAT(t.seqs_below(2), ElementsAre(0, 1));
}

TEST(SharingTreeFlattened, GivesEachSequenceItsWholePathAsOneSegment) {
  const SharingTree t = uneven_forest().flattened();
  EXPECT_EQ(t.num_segments(), 6);
  EXPECT_EQ(t.num_seqs(), 6);
  EXPECT_EQ(t.depth(), 1);
  const SharingTree original = uneven_forest();
  long long sum = 0;
  for (int s = 0; s < 6; ++s) {
    EXPECT_THAT(t.path(s), ElementsAre(t.leaf(s)));
    EXPECT_EQ(t.length(t.leaf(s)), original.path_length(s));
    EXPECT_THAT(t.seqs_below(t.leaf(s)), ElementsAre(s));
    sum += original.path_length(s);
  }
  EXPECT_EQ(t.total_tokens(), sum);
}

TEST(SharingTreeDescribe, StatesTheCounts) {
  EXPECT_EQ(SharingTree::prefix_suffix(1024, {3, 3}).describe(), "3 segments, 2 sequences, depth 2, 1030 tokens");
}

// ---- invalid input -------------------------------------------------------------------------------

template <typename F>
void expect_invalid(F&& build, std::vector<const char*> fragments) {
  ::testing::Matcher<std::string> all = HasSubstr(fragments.at(0));
  for (std::size_t i = 1; i < fragments.size(); ++i) all = AllOf(all, HasSubstr(fragments[i]));
  EXPECT_THAT(build, ThrowsMessage<std::invalid_argument>(all));
}

TEST(SharingTreeInvalid, ParentsAndLengthsOfDifferentSizes) {
  expect_invalid([] { SharingTree::from_parents({-1, 0, 0}, {4, 4}, {1, 2}); },
                 {"parents has 3 entries", "lengths has 2"});
}

TEST(SharingTreeInvalid, NegativeLength) {
  expect_invalid([] { SharingTree::from_parents({-1, 0}, {4, -4}, {1}); }, {"lengths[1] = -4", "negative"});
  expect_invalid([] { SharingTree::flat({3, -2}); }, {"lengths[1] = -2"});
  expect_invalid([] { SharingTree::prefix_suffix(-1, {2}); }, {"lengths[0] = -1"});
}

TEST(SharingTreeInvalid, ParentOutOfRange) {
  expect_invalid([] { SharingTree::from_parents({-1, 0, 7}, {1, 1, 1}, {1, 2}); }, {"parents[2] = 7", "[0, 3)"});
  expect_invalid([] { SharingTree::from_parents({-2, 0}, {1, 1}, {1}); }, {"parents[0] = -2"});
}

TEST(SharingTreeInvalid, SegmentThatIsItsOwnParent) {
  expect_invalid([] { SharingTree::from_parents({-1, 1}, {1, 1}, {0}); }, {"parents[1] = 1"});
}

TEST(SharingTreeInvalid, CycleOfParents) {
  // 0 -> 1 -> 2 -> 0, never reaching a root; segment 3 is a separate root.
  expect_invalid([] { SharingTree::from_parents({1, 2, 0, -1}, {1, 1, 1, 1}, {3}); }, {"segment 0", "cycle"});
}

TEST(SharingTreeInvalid, SequenceWithNoLeaf) {
  // Sequence 0 names segment 0, which has a child: its path would not end at a leaf.
  expect_invalid([] { SharingTree::from_parents({-1, 0}, {4, 4}, {0, 1}); }, {"seq_leaves[0] = 0", "not a leaf"});
}

TEST(SharingTreeInvalid, SequenceNamingNoSegment) {
  expect_invalid([] { SharingTree::from_parents({-1, 0}, {4, 4}, {5}); }, {"seq_leaves[0] = 5", "[0, 2)"});
  expect_invalid([] { SharingTree::from_parents({-1}, {4}, {-1}); }, {"seq_leaves[0] = -1"});
}

TEST(SharingTreeInvalid, LeafWithNoSequence) {
  expect_invalid([] { SharingTree::from_parents({-1, 0, 0}, {4, 4, 4}, {1}); }, {"leaf segment 2", "no sequence"});
}

TEST(SharingTreeInvalid, LeafClaimedTwice) {
  expect_invalid([] { SharingTree::from_parents({-1, 0}, {4, 4}, {1, 1}); },
                 {"leaf segment 1", "claimed by sequences 0 and 1"});
}

TEST(SharingTreeInvalid, EmptyBatch) {
  expect_invalid([] { SharingTree::from_parents({}, {}, {}); }, {"seq_leaves is empty"});
  expect_invalid([] { SharingTree::flat({}); }, {"seq_leaves is empty"});
  expect_invalid([] { SharingTree::prefix_suffix(5, {}); }, {"seq_leaves is empty"});
}

}  // namespace
}  // namespace hydragen
