// tensor_dims.hpp: the dimensions each tensor of a problem has, the message naming the first that
// differs, the shape read off Q and K, and the segments of one packed K or V buffer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "hydragen/tensor_dims.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const SharingTree kTree = SharingTree::prefix_suffix(5, {2, 0, 3});
const AttentionShape kShape = make_shape(3, 1, 8, 2, 16, DType::bf16);

TEST(TensorDims, FollowTheLayoutsOfTheDesign) {
  EXPECT_EQ(dims_text(query_dims(kShape)), "[B=3, q_len=1, Hq=8, D=16]");
  EXPECT_EQ(dims_text(lse_dims(kShape)), "[B=3, q_len=1, Hq=8]");
  EXPECT_EQ(dims_text(segment_dims(kShape, kTree, 0)), "[length=5, Hkv=2, D=16]");
  EXPECT_EQ(dims_text(segment_dims(kShape, kTree, 2)), "[length=0, Hkv=2, D=16]");
  EXPECT_EQ(dims_text(packed_dims(kShape, kTree)), "[tokens=10, Hkv=2, D=16]");
}

TEST(CheckDims, AcceptsTheExpectedSizes) {
  EXPECT_NO_THROW(check_dims("q", {3, 1, 8, 16}, query_dims(kShape)));
  EXPECT_NO_THROW(check_dims("k[2]", {0, 2, 16}, segment_dims(kShape, kTree, 2)));
}

TEST(CheckDims, NamesTheTensorAndTheFirstDimensionThatDiffers) {
  EXPECT_THAT([] { check_dims("k[1]", {3, 2, 16}, segment_dims(kShape, kTree, 1)); },
              ThrowsMessage<std::invalid_argument>(
                  "k[1]: dim 0 (length) is 3, expected 2 (shape [3, 2, 16], expected [length=2, Hkv=2, D=16])"));
  EXPECT_THAT([] { check_dims("o", {3, 1, 8, 8}, query_dims(kShape)); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("o: dim 3 (D) is 8, expected 16")));
  EXPECT_THAT([] { check_dims("lse", {3, 1, 8, 1}, lse_dims(kShape)); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("lse: 4 dims, expected 3 (shape [3, 1, 8, 1]")));
}

TEST(ShapeFromDims, ReadsBQLenHqDFromQAndHkvFromK) {
  const AttentionShape s = shape_from_dims({3, 2, 8, 64}, {7, 4, 64}, DType::fp16);
  EXPECT_EQ(s.num_seqs, 3);
  EXPECT_EQ(s.q_len, 2);
  EXPECT_EQ(s.q_heads, 8);
  EXPECT_EQ(s.kv_heads, 4);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.dtype, DType::fp16);
  EXPECT_FLOAT_EQ(s.scale, 0.125f);
  EXPECT_FLOAT_EQ(shape_from_dims({3, 2, 8, 64}, {7, 4, 64}, DType::fp16, 0.5f).scale, 0.5f);
}

TEST(ShapeFromDims, RefusesAWrongRankOrADOnWhichQAndKDisagree) {
  EXPECT_THAT([] { shape_from_dims({3, 8, 64}, {7, 4, 64}, DType::fp32); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("q: 3 dims [3, 8, 64], expected 4: [B, q_len, Hq, D]")));
  EXPECT_THAT([] { shape_from_dims({3, 1, 8, 64}, {7, 64}, DType::fp32); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("k: 2 dims [7, 64], expected 3: [length, Hkv, D]")));
  EXPECT_THAT([] { shape_from_dims({3, 1, 8, 64}, {7, 4, 128}, DType::fp32); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("k: D is 128 but q's D is 64")));
  EXPECT_THAT([] { shape_from_dims({1LL << 32, 1, 8, 64}, {7, 4, 64}, DType::fp32); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("q: B = 4294967296 is past the largest int")));
}

TEST(SegmentViews, CutOnePackedBufferAtTheSegmentsLengths) {
  const std::size_t row = 2 * 16;
  std::vector<std::uint16_t> packed(10 * row);
  const auto views = segment_views(ConstTensor{packed.data(), DType::bf16, packed.size()}, kShape, kTree);
  ASSERT_EQ(views.size(), 4u);  // the prefix, then the suffixes of 2, 0 and 3 tokens
  EXPECT_EQ(views[0].data, packed.data());
  EXPECT_EQ(views[0].numel, 5 * row);
  EXPECT_EQ(views[1].data, packed.data() + 5 * row);
  EXPECT_EQ(views[1].numel, 2 * row);
  EXPECT_EQ(views[2].data, nullptr);  // empty
  EXPECT_EQ(views[2].numel, 0u);
  EXPECT_EQ(views[3].data, packed.data() + 7 * row);
  EXPECT_EQ(views[3].numel, 3 * row);
  EXPECT_EQ(views[3].dtype, DType::bf16);
}

TEST(SegmentViews, RefuseABufferSmallerThanTheTreesTokens) {
  std::vector<std::uint16_t> packed(9 * 32);
  EXPECT_THAT([&] { segment_views(ConstTensor{packed.data(), DType::bf16, packed.size()}, kShape, kTree); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("holds 288 elements, the tree's 10 tokens need 320")));
}

}  // namespace
}  // namespace hydragen
