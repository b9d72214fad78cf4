// dtype.hpp: names, sizes, and the fp16/bf16 conversions (IEEE round to nearest, ties to even).
//
// Expected bit patterns come from the formats' definitions (fp16: 1 sign, 5 exponent bits with bias
// 15, 10 mantissa bits; bf16: the top 16 bits of an fp32), not from the implementation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "hydragen/dtype.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr DType kAllDtypes[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16};

float pow2(int e) { return std::ldexp(1.0f, e); }

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bool half_is_nan(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

// ---- names and sizes ------------------------------------------------------------------------------

TEST(DType, SizesAreTheStorageWidths) {
  EXPECT_EQ(dtype_size(DType::fp64), 8u);
  EXPECT_EQ(dtype_size(DType::fp32), 4u);
  EXPECT_EQ(dtype_size(DType::fp16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
}

TEST(DType, NamesParseBackToTheSameDtype) {
  for (DType d : kAllDtypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
}

TEST(DType, ParsingAnUnknownNameThrowsNamingTheTextAndTheChoices) {
  EXPECT_THAT([] { parse_dtype("float32"); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("'float32'"), HasSubstr("fp64, fp32, fp16, bf16"))));
  EXPECT_THAT([] { parse_dtype(""); }, ThrowsMessage<std::invalid_argument>(HasSubstr("''")));
  EXPECT_THAT([] { parse_dtype("fp32 "); }, ThrowsMessage<std::invalid_argument>(HasSubstr("'fp32 '")));
}

TEST(DType, LseIsFp64ForTheReferenceAndFp32Otherwise) {
  EXPECT_EQ(lse_dtype(DType::fp64), DType::fp64);
  EXPECT_EQ(lse_dtype(DType::fp32), DType::fp32);
  EXPECT_EQ(lse_dtype(DType::fp16), DType::fp32);
  EXPECT_EQ(lse_dtype(DType::bf16), DType::fp32);
}

// u is the unit roundoff iff 1 + u is a tie that rounds (to even) down to 1, while 1 + 2u is representable.
TEST(DType, UnitRoundoffIsHalfTheGapAboveOne) {
  for (DType d : kAllDtypes) {
    const double u = unit_roundoff(d);
    EXPECT_EQ(round_through(1.0 + u, d), 1.0) << dtype_name(d);
    EXPECT_EQ(round_through(1.0 + 2 * u, d), 1.0 + 2 * u) << dtype_name(d);
  }
  EXPECT_EQ(unit_roundoff(DType::fp16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
}

// ---- fp16 -----------------------------------------------------------------------------------------

TEST(Fp16, KnownValuesHaveTheirIeeeBitPatterns) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(float_to_half_bits(pow2(-14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(pow2(-24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Fp16, BitPatternsDecodeToTheirValues) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);  // 2^-2 * (1 + 341/1024)
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), pow2(-24));
  EXPECT_EQ(half_bits_to_float(0x03FF), 1023.0f * pow2(-24));  // largest subnormal
  EXPECT_EQ(half_bits_to_float(0x8001), -pow2(-24));
  EXPECT_EQ(half_bits_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_bits_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
}

TEST(Fp16, TiesRoundToTheEvenMantissa) {
  const float ulp = pow2(-10);                                          // spacing of fp16 in [1, 2)
  EXPECT_EQ(float_to_half_bits(1.0f + 0.5f * ulp), 0x3C00);             // 1 (even) vs 1+ulp (odd): down
  EXPECT_EQ(float_to_half_bits(1.0f + 1.5f * ulp), 0x3C02);             // 1+ulp (odd) vs 1+2ulp (even): up
  EXPECT_EQ(float_to_half_bits(1.0f + 0.5f * ulp + pow2(-20)), 0x3C01);  // just past the tie: nearest
  EXPECT_EQ(float_to_half_bits(1.0f + 0.5f * ulp - pow2(-20)), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-(1.0f + 1.5f * ulp)), 0xBC02);
}

TEST(Fp16, SubnormalsRoundToNearestEvenToo) {
  const float tiny = pow2(-24);                              // one subnormal unit
  EXPECT_EQ(float_to_half_bits(0.5f * tiny), 0x0000);        // tie between 0 (even) and 1
  EXPECT_EQ(float_to_half_bits(1.5f * tiny), 0x0002);        // tie between 1 and 2 (even)
  EXPECT_EQ(float_to_half_bits(2.5f * tiny), 0x0002);        // tie between 2 (even) and 3
  EXPECT_EQ(float_to_half_bits(0.75f * tiny), 0x0001);
  EXPECT_EQ(float_to_half_bits(0.25f * tiny), 0x0000);
  EXPECT_EQ(float_to_half_bits(-1.5f * tiny), 0x8002);
  EXPECT_EQ(float_to_half_bits(1023.5f * tiny), 0x0400);     // tie between 0x3FF and 0x400: into the normals
  EXPECT_EQ(float_to_half_bits(1022.5f * tiny), 0x03FE);
}

TEST(Fp16, ValuesPastTheLargestFiniteTieOverflowToInfinity) {
  // 65520 is the midpoint between 65504 (odd mantissa 0x3FF) and 2^16 (not representable): ties to inf.
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::max()), 0x7C00);
}

TEST(Fp16, NanStaysNan) {
  EXPECT_TRUE(half_is_nan(float_to_half_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(float_to_half_bits(-std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lies only in the low mantissa bits that fp16 drops must not become inf.
  EXPECT_TRUE(half_is_nan(float_to_half_bits(float_from_bits(0x7F800001u))));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7C01)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0xFFFF)));  // what poisoned outputs hold
}

// Every non-NaN pattern decodes to a float that encodes back to the same pattern.
TEST(Fp16, EveryBitPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if (half_is_nan(h)) {
      EXPECT_TRUE(half_is_nan(float_to_half_bits(half_bits_to_float(h)))) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_half_bits(half_bits_to_float(h)), h) << std::hex << bits;
    }
  }
}

// The rounding rule, checked on random floats against the two neighbouring fp16 values.
TEST(Fp16, RandomFloatsRoundToTheNearestNeighbour) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-26.0f, 16.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::exp2(exponent(rng)) * (rng() % 2 ? 1.0f : -1.0f);
    const std::uint16_t h = float_to_half_bits(x);
    const double err = std::fabs(static_cast<double>(x) - half_bits_to_float(h));
    // Neighbours in magnitude (the sign bit is separate): one pattern below and one above.
    const auto mag = static_cast<std::uint16_t>(h & 0x7FFFu), sign = static_cast<std::uint16_t>(h & 0x8000u);
    if (mag == 0x7C00u) {  // inf: only from at or past the 65520 tie
      ASSERT_GE(std::fabs(x), 65520.0f) << x;
      continue;
    }
    {
      const double up = half_bits_to_float(static_cast<std::uint16_t>(sign | (mag + 1)));
      ASSERT_LE(err, std::fabs(static_cast<double>(x) - up)) << x;
    }
    if (mag > 0) {
      const double down = half_bits_to_float(static_cast<std::uint16_t>(sign | (mag - 1)));
      ASSERT_LE(err, std::fabs(static_cast<double>(x) - down)) << x;
    }
  }
}

// ---- bf16 -----------------------------------------------------------------------------------------

TEST(Bf16, KnownValuesHaveTheirBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0x4049), 3.140625f);  // 2 * (1 + 73/128)
  EXPECT_EQ(bf16_bits_to_float(0x7F7F), std::ldexp(255.0f, 120));  // largest finite: (2 - 2^-7) * 2^127
}

TEST(Bf16, TiesRoundToTheEvenMantissa) {
  const float ulp = pow2(-7);  // spacing of bf16 in [1, 2)
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0.5f * ulp), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 1.5f * ulp), 0x3F82);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0.5f * ulp + pow2(-20)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(-(1.0f + 0.5f * ulp)), 0xBF80);
}

TEST(Bf16, SubnormalsRoundToNearestEvenToo) {
  const float tiny = pow2(-133);  // bf16's smallest subnormal
  EXPECT_EQ(float_to_bf16_bits(tiny), 0x0001);
  EXPECT_EQ(float_to_bf16_bits(1.5f * tiny), 0x0002);
  EXPECT_EQ(float_to_bf16_bits(0.5f * tiny), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(pow2(-149)), 0x0000);  // fp32's smallest subnormal is far below half a unit
  EXPECT_EQ(bf16_bits_to_float(0x0001), tiny);
}

TEST(Bf16, ValuesPastTheLargestFiniteTieOverflowToInfinity) {
  // Largest finite bf16 has mantissa 0x7F (odd); the midpoint to 2^128 ties upward, to inf.
  const float midpoint = std::ldexp(511.0f, 119);  // (2 - 2^-8) * 2^127
  EXPECT_EQ(float_to_bf16_bits(midpoint), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(std::nextafter(midpoint, 0.0f)), 0x7F7F);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::max()), 0xFF80);
}

TEST(Bf16, NanStaysNan) {
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the 16 bits bf16 drops: truncation alone would give inf.
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_from_bits(0x7F800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_from_bits(0xFF800001u))));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0xFFFF)));
}

TEST(Bf16, EveryBitPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    if (bf16_is_nan(b)) {
      EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(bf16_bits_to_float(b)))) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_bf16_bits(bf16_bits_to_float(b)), b) << std::hex << bits;
    }
  }
}

// ---- round_through, encode, decode ----------------------------------------------------------------

TEST(RoundThrough, RoundsToTheDtypesNearestValue) {
  EXPECT_EQ(round_through(0.1, DType::fp64), 0.1);
  EXPECT_EQ(round_through(0.1, DType::fp32), static_cast<double>(0.1f));
  EXPECT_EQ(round_through(1.0 / 3.0, DType::fp16), 0.333251953125);
  EXPECT_EQ(round_through(1.0 / 3.0, DType::bf16), 0.333984375);  // 2^-2 * (1 + 43/128)
  EXPECT_EQ(round_through(65520.0, DType::fp16), std::numeric_limits<double>::infinity());
}

TEST(EncodeDecode, RepresentableValuesSurviveTheRoundTripInEveryDtype) {
  const std::vector<double> raw = {1.0, -2.5, 0.333, 1e-3, -7e4, 3e-6, 0.0, 123.456, -0.0};
  for (DType d : kAllDtypes) {
    std::vector<double> values;
    for (double x : raw) values.push_back(round_through(x, d));
    const std::vector<std::byte> bytes = encode(values, d);
    ASSERT_EQ(bytes.size(), values.size() * dtype_size(d)) << dtype_name(d);
    const std::vector<double> back = decode_values(bytes.data(), values.size(), d);
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(back[i], values[i]) << dtype_name(d) << " element " << i;
      EXPECT_EQ(std::signbit(back[i]), std::signbit(values[i])) << dtype_name(d) << " element " << i;
    }
  }
}

TEST(EncodeDecode, SixteenBitEncodingsHoldTheConversionsBitPatterns) {
  const std::vector<std::byte> h = encode({1.0, -2.0}, DType::fp16);
  const std::vector<std::byte> b = encode({1.0, -2.0}, DType::bf16);
  std::uint16_t hb[2], bb[2];
  std::memcpy(hb, h.data(), sizeof hb);
  std::memcpy(bb, b.data(), sizeof bb);
  EXPECT_EQ(hb[0], 0x3C00);
  EXPECT_EQ(hb[1], 0xC000);
  EXPECT_EQ(bb[0], 0x3F80);
  EXPECT_EQ(bb[1], 0xC000);
}

TEST(EncodeDecode, AllOnesBytesDecodeToNanInEveryDtype) {
  // StagedProblem::poison_outputs relies on this to make unwritten outputs fail.
  const std::vector<unsigned char> ones(8, 0xFF);
  for (DType d : kAllDtypes) EXPECT_TRUE(std::isnan(decode_values(ones.data(), 1, d)[0])) << dtype_name(d);
}

}  // namespace
}  // namespace hydragen
