// cost_model.hpp: FLOPs and bytes worked out by hand from the definitions in the header.
//   FLOPs: 4 * D per (sequence, query, query head, attended token).
//   floor: distinct K/V once + Q + O + LSE.  flat: each sequence reads its whole path + Q + O + LSE.
//   decomposed: distinct K/V once, Q once per segment on the path, O + LSE once, and for paths of more
//   than one segment an fp32 partial (O and LSE) written and read back per segment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "hydragen/cost_model.hpp"
#include "hydragen/nominal_peaks.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// B=2, P=4, S={1,2}, Hq=2, Hkv=1, D=2, fp32, q_len=1.
//   K/V per token: 2 (K and V) * Hkv 1 * D 2 * 4 bytes = 16
//   Q per sequence: q_len 1 * Hq 2 * D 2 * 4 = 16;  O + LSE per sequence: 2 rows * (2 * 4 + 4) = 24
//   fp32 partial per sequence and segment: 2 rows * (D 2 + 1) * 4 = 24
//   paths: 4+1 = 5 and 4+2 = 6 tokens; distinct tokens 4+1+2 = 7
struct Small : ::testing::Test {
  AttentionShape shape = make_shape(2, 1, 2, 1, 2, DType::fp32);
  SharingTree tree = SharingTree::prefix_suffix(4, {1, 2});
};

TEST_F(Small, FlopsCountFourDPerQueryHeadAndAttendedToken) {
  EXPECT_EQ(estimate_cost(shape, tree).flops, 4.0 * 2 * 2 * (5 + 6));  // 176
}

TEST_F(Small, KvBytesCountDistinctTokensAndRedundantBytesEveryPath) {
  const CostEstimate c = estimate_cost(shape, tree);
  EXPECT_EQ(c.kv_bytes, 7 * 16.0);             // 112
  EXPECT_EQ(c.redundant_kv_bytes, 11 * 16.0);  // 176
}

TEST_F(Small, FloorReadsEachDistinctKvByteOncePlusQAndOutputs) {
  EXPECT_EQ(estimate_cost(shape, tree).floor_bytes, 112 + 2 * (16 + 24.0));  // 192
}

TEST_F(Small, FlatReadsEachSequencesWholePath) {
  const CostEstimate c = estimate_cost(shape, tree);
  EXPECT_EQ(c.flat_bytes, (5 * 16 + 16 + 24) + (6 * 16 + 16 + 24.0));  // 256
  EXPECT_EQ(c.flat_memory_bytes, c.flat_bytes);                         // no cache given
  EXPECT_DOUBLE_EQ(c.flat_intensity(), 176.0 / 256);
}

TEST_F(Small, DecomposedReadsSegmentsOnceAndRoundTripsThePartials) {
  const CostEstimate c = estimate_cost(shape, tree);
  // 112 + per sequence: Q for 2 segments (2 * 16) + O/LSE (24) + 2 segments' partials written and read (2 * 2 * 24).
  EXPECT_EQ(c.decomposed_bytes, 112 + 2 * (2 * 16 + 24 + 2 * 2 * 24.0));  // 416
  EXPECT_DOUBLE_EQ(c.decomposed_intensity(), 176.0 / 416);
}

TEST_F(Small, CacheAbsorbsFlatRereadsOfASharedSegmentThatFits) {
  // The prefix's K/V is 4 * 16 = 64 bytes and 2 sequences read it: the second read hits the cache.
  EXPECT_EQ(estimate_cost(shape, tree, CostOptions{64}).flat_memory_bytes, 256 - 64.0);
  EXPECT_EQ(estimate_cost(shape, tree, CostOptions{63}).flat_memory_bytes, 256.0);
  // Leaves are read by one sequence only: nothing more to absorb however large the cache.
  const CostEstimate big = estimate_cost(shape, tree, CostOptions{1e12});
  EXPECT_EQ(big.flat_memory_bytes, 256 - 64.0);
  EXPECT_EQ(big.flat_bytes, 256.0);         // the traffic requested is unchanged
  EXPECT_EQ(big.decomposed_bytes, 416.0);   // already reads each segment once
  EXPECT_DOUBLE_EQ(big.flat_intensity(), 176.0 / 192);
}

TEST(CostModel, CacheAbsorbsEverySharedLevelOfATree) {
  // Root 8 tokens and one group of 4 tokens, both read by 3 sequences; suffixes of 1. fp32, Hkv=1, D=2:
  // 16 bytes per token. Flat traffic 3 * (13 * 16 + Q 16 + out 24); the cache saves 2 re-reads of each.
  const AttentionShape shape = make_shape(3, 1, 2, 1, 2, DType::fp32);
  const SharingTree tree = SharingTree::two_level(8, {4}, {{1, 1, 1}});
  const CostEstimate c = estimate_cost(shape, tree, CostOptions{1e12});
  EXPECT_EQ(c.flat_bytes, 3 * (13 * 16 + 16 + 24.0));
  EXPECT_EQ(c.flat_memory_bytes, c.flat_bytes - 2 * 8 * 16 - 2 * 4 * 16);
}

TEST(CostModel, CausalQueriesAttendAllButTheLaterLeafTokens) {
  // q_len=3, prefix 5, leaf 4: query t attends 5 + 4 - (2 - t) tokens: 7, 8, 9. Hq=2, D=2.
  const AttentionShape shape = make_shape(1, 3, 2, 1, 2, DType::fp32);
  const CostEstimate c = estimate_cost(shape, SharingTree::prefix_suffix(5, {4}));
  EXPECT_EQ(c.flops, 4.0 * 2 * 2 * (7 + 8 + 9));  // 384
  // Q: 3 queries * 2 heads * 2 * 4 = 48; O + LSE: 6 rows * (8 + 4) = 72; K/V 9 tokens * 16.
  EXPECT_EQ(c.floor_bytes, 9 * 16 + 48 + 72.0);
}

TEST(CostModel, CausalLeafOfQLenMinusOneTokensLeavesTheFirstQueryNothing) {
  // Flat, leaf 2 tokens, q_len 3: queries attend 0, 1 and 2 tokens.
  const AttentionShape shape = make_shape(1, 3, 1, 1, 4, DType::fp32);
  EXPECT_EQ(estimate_cost(shape, SharingTree::flat({2})).flops, 4.0 * 4 * (0 + 1 + 2));
}

TEST(CostModel, SixteenBitInputsKeepAnFp32Lse) {
  // fp16, same small problem: K/V per token 2 * 1 * 2 * 2 = 8; Q 2 * 2 * 2 = 8; O + LSE 2 * (2 * 2 + 4) = 16.
  const AttentionShape shape = make_shape(2, 1, 2, 1, 2, DType::fp16);
  const CostEstimate c = estimate_cost(shape, SharingTree::prefix_suffix(4, {1, 2}));
  EXPECT_EQ(c.floor_bytes, 7 * 8 + 2 * (8 + 16.0));
  // Partials stay fp32: 2 rows * 3 * 4 = 24 per segment, as for fp32 inputs.
  EXPECT_EQ(c.decomposed_bytes, 7 * 8 + 2 * (2 * 8 + 16 + 2 * 2 * 24.0));
}

TEST(CostModel, WithoutSharingEveryMethodIsAtTheFloor) {
  const AttentionShape shape = make_shape(3, 1, 8, 2, 64, DType::bf16);
  const CostEstimate c = estimate_cost(shape, SharingTree::flat({10, 0, 7}), CostOptions{1e12});
  EXPECT_EQ(c.kv_bytes, c.redundant_kv_bytes);
  EXPECT_EQ(c.flat_bytes, c.floor_bytes);
  EXPECT_EQ(c.flat_memory_bytes, c.floor_bytes);
  EXPECT_EQ(c.decomposed_bytes, c.floor_bytes);  // one segment per path: nothing to merge
}

TEST(CostModel, ValidatesTheProblem) {
  EXPECT_THAT([] { estimate_cost(make_shape(3, 1, 2, 1, 2, DType::fp32), SharingTree::prefix_suffix(4, {1, 2})); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("num_seqs = 3")));
}

TEST(Roofline, IsTheSlowerOfComputeAndMemory) {
  EXPECT_EQ(roofline_seconds(100, 50, Peaks{10, 100}), 10.0);   // compute: 10 s vs 0.5 s
  EXPECT_EQ(roofline_seconds(100, 50, Peaks{1000, 1}), 50.0);   // memory: 0.1 s vs 50 s
}

TEST(Roofline, RejectsPeaksThatAreNotPositive) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Peaks& p : {Peaks{0, 1}, Peaks{1, 0}, Peaks{-1, 1}, Peaks{1, nan}}) {
    EXPECT_THAT([&] { roofline_seconds(1, 1, p); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("peaks must be positive")))
        << p.flops_per_s << " " << p.bytes_per_s;
  }
}

TEST(NominalPeaks, TheH100sDatasheetForSixteenBitStorage) {
  const auto h100 = nominal_peaks("NVIDIA H100 80GB HBM3", DType::bf16);
  ASSERT_TRUE(h100.has_value());
  EXPECT_DOUBLE_EQ(h100->flops_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h100->bytes_per_s, 3.35e12);
  EXPECT_EQ(nominal_peaks("NVIDIA H100 80GB HBM3", DType::fp16)->flops_per_s, h100->flops_per_s);
}

TEST(NominalPeaks, NoneForAnUnknownDeviceOrCudaCoreDtypes) {
  EXPECT_FALSE(nominal_peaks("NVIDIA Made-Up GPU 9000", DType::bf16).has_value());
  EXPECT_FALSE(nominal_peaks("NVIDIA H100 80GB HBM3", DType::fp32).has_value());
}

}  // namespace
}  // namespace hydragen
