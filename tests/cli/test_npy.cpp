// The .npy reader and writer (experiments/diff/npy.hpp): hand-built byte buffers for every accepted
// form and every rejected one, and a randomized mutation test (fixed seed, bounded time) showing the
// parser either parses consistently or throws std::invalid_argument -- never crashes or reads out of
// bounds (built with -fsanitize=address,undefined under HYDRAGEN_SANITIZE=ON).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "diff/npy.hpp"

namespace hydragen::diff {
namespace {

using ::testing::HasSubstr;

// magic + version + header length (2 bytes for v1, 4 for v2/v3) + header text + data.
std::vector<std::byte> build(int major, const std::string& header, const std::vector<std::uint8_t>& data,
                             std::string magic = "\x93NUMPY") {
  std::vector<std::byte> out;
  for (char c : magic) out.push_back(static_cast<std::byte>(c));
  out.push_back(static_cast<std::byte>(major));
  out.push_back(std::byte{0});
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (auto b : data) out.push_back(static_cast<std::byte>(b));
  return out;
}

std::string header(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse_npy(bytes);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;  // one line
    return what;
  }
  return "(parsed)";
}

TEST(Npy, ParsesEachDtypeV1) {
  // 1.0f as fp32 and fp64, 1.0 as fp16 (0x3C00) and bf16 (0x3F80), little-endian.
  const NpyArray f4 = parse_npy(build(1, header("<f4", "(2,)"), {0, 0, 0x80, 0x3F, 0, 0, 0, 0x40}));
  EXPECT_EQ(f4.dtype, DType::fp32);
  EXPECT_EQ(f4.values(), (std::vector<double>{1.0, 2.0}));
  const NpyArray f8 = parse_npy(build(1, header("<f8", "(1, 1)"), {0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));
  EXPECT_EQ(f8.dtype, DType::fp64);
  EXPECT_EQ(f8.shape, (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(f8.values(), std::vector<double>{1.0});
  const NpyArray f2 = parse_npy(build(1, header("<f2", "(1,)"), {0x00, 0x3C}));
  EXPECT_EQ(f2.dtype, DType::fp16);
  EXPECT_EQ(f2.values(), std::vector<double>{1.0});
  for (const char* bf : {"<u2", "<V2", "|V2", "bfloat16"}) {
    const NpyArray b = parse_npy(build(1, header(bf, "(1,)"), {0x80, 0x3F}));
    EXPECT_EQ(b.dtype, DType::bf16) << bf;
    EXPECT_EQ(b.values(), std::vector<double>{1.0}) << bf;
  }
}

TEST(Npy, ParsesV2V3ScalarEmptyAndDoubleQuotes) {
  EXPECT_EQ(parse_npy(build(2, header("<f4", "(1,)"), {0, 0, 0x80, 0x3F})).values(), std::vector<double>{1.0});
  EXPECT_EQ(parse_npy(build(3, header("<f4", "(1,)"), {0, 0, 0x80, 0x3F})).values(), std::vector<double>{1.0});
  const NpyArray scalar = parse_npy(build(1, header("<f4", "()"), {0, 0, 0x80, 0x3F}));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.count(), 1u);
  EXPECT_EQ(parse_npy(build(1, header("<f4", "(3, 0, 5)"), {})).count(), 0u);
  EXPECT_EQ(parse_npy(build(1, "{\"shape\": (1,), \"fortran_order\": False, \"descr\": \"<f2\"}    \n", {0, 0x3C}))
                .values(),
            std::vector<double>{1.0});
}

TEST(Npy, WriterRoundTripsEveryDtype) {
  const std::vector<double> values{1.0, -2.5, 0.125, 3.0, 0.0, -0.0};
  for (DType dtype : {DType::fp16, DType::bf16, DType::fp32, DType::fp64}) {
    const std::vector<std::byte> bytes = format_npy(dtype, {2, 3}, values);
    EXPECT_EQ(bytes.size() % 64, (values.size() * dtype_size(dtype)) % 64);  // header padded to 64
    const NpyArray a = parse_npy(bytes);
    EXPECT_EQ(a.dtype, dtype);
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a.values(), values);
  }
  EXPECT_THROW(format_npy(DType::fp32, {2, 2}, values), std::invalid_argument);
}

TEST(Npy, RejectsMalformedFilesWithOneLineMessages) {
  const auto ok = header("<f4", "(1,)");
  const std::vector<std::uint8_t> one{0, 0, 0x80, 0x3F};
  EXPECT_THAT(error_of(build(1, ok, one, "\x93NUMPZ")), HasSubstr("bad magic"));
  EXPECT_THAT(error_of({}), HasSubstr("shorter than the magic"));
  EXPECT_THAT(error_of(build(4, ok, one)), HasSubstr("version 4.0 is not supported"));
  auto truncated_header = build(1, ok, {});
  truncated_header.resize(truncated_header.size() - 5);
  EXPECT_THAT(error_of(truncated_header), HasSubstr("truncated header"));
  auto in_length = build(2, ok, {});
  in_length.resize(10);
  EXPECT_THAT(error_of(in_length), HasSubstr("inside the header length"));
  EXPECT_THAT(error_of(build(1, ok, {0, 0, 0x80})), HasSubstr("truncated data"));
  EXPECT_THAT(error_of(build(1, ok, {0, 0, 0x80, 0x3F, 0})), HasSubstr("1 trailing bytes"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(1,)", "True"), one)), HasSubstr("fortran_order True"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(1,)", "Maybe"), one)), HasSubstr("must be True or False"));
  EXPECT_THAT(error_of(build(1, header(">f4", "(1,)"), one)), HasSubstr("big-endian"));
  EXPECT_THAT(error_of(build(1, header("<i4", "(1,)"), one)), HasSubstr("descr '<i4' is not supported"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(4294967296, 4294967296, 4294967296)"), one)), HasSubstr("overflows"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(99999999999999999999999,)"), one)), HasSubstr("overflows"));
  EXPECT_THAT(error_of(build(1, header("<f8", "(2305843009213693952,)"), one)), HasSubstr("overflows"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(1000000, 1000000)"), one)), HasSubstr("truncated data"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(1.5,)"), one)), HasSubstr("expected ',' or ')'"));
  EXPECT_THAT(error_of(build(1, header("<f4", "(-1,)"), one)), HasSubstr("not a non-negative integer"));
  EXPECT_THAT(error_of(build(1, header("<f4", "('a',)"), one)), HasSubstr("not a non-negative integer"));
  EXPECT_THAT(error_of(build(1, "{'descr': '<f4', 'shape': (1,)}", one)), HasSubstr("no 'fortran_order'"));
  EXPECT_THAT(error_of(build(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", one)),
              HasSubstr("unknown key 'x'"));
  EXPECT_THAT(error_of(build(1, "{'descr': '<f4", one)), HasSubstr("unterminated string"));
  EXPECT_THAT(error_of(build(1, ok + "junk", one)), HasSubstr("text after the dict"));
  EXPECT_THAT(error_of(build(1, "", one)), HasSubstr("expected '{'"));
}

// Valid files of every dtype, then thousands of random mutations of them: every result must parse
// consistently (data size = shape product x item size) or throw std::invalid_argument.
TEST(Npy, RandomMutationsNeverCrash) {
  std::vector<std::vector<std::byte>> seeds;
  std::vector<double> values(24);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5 * static_cast<double>(i) - 3.0;
  for (DType dtype : {DType::fp16, DType::bf16, DType::fp32, DType::fp64}) {
    seeds.push_back(format_npy(dtype, {2, 3, 4}, values));
    seeds.push_back(format_npy(dtype, {24}, values));
    seeds.push_back(format_npy(dtype, {}, {1.0}));
  }
  seeds.push_back(build(2, header("<f4", "(1,)"), {0, 0, 0x80, 0x3F}));
  const std::string tokens[] = {"(", ")", ",", "'", "\"", "{", "}", ":", "True", "False", "<f4", ">f8", "<u2",
                                "999999999999", "18446744073709551615", "0", "-", " ", "\n", "shape", "descr"};
  std::mt19937_64 rng(20261121);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  std::size_t parsed = 0, rejected = 0;
  for (int iteration = 0; iteration < 200000 && std::chrono::steady_clock::now() < deadline; ++iteration) {
    std::vector<std::byte> bytes = seeds[pick(std::size(seeds))];
    const std::size_t mutations = 1 + pick(4);
    for (std::size_t m = 0; m < mutations; ++m) {
      switch (pick(6)) {
        case 0:  // bit flip
          if (!bytes.empty()) bytes[pick(bytes.size())] ^= static_cast<std::byte>(1u << pick(8));
          break;
        case 1:  // truncation
          bytes.resize(pick(bytes.size() + 1));
          break;
        case 2:  // random byte inserted
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(pick(bytes.size() + 1)),
                       static_cast<std::byte>(pick(256)));
          break;
        case 3:  // random byte overwritten (mostly in the header)
          if (!bytes.empty()) bytes[pick(std::min<std::size_t>(bytes.size(), 80))] = static_cast<std::byte>(pick(256));
          break;
        case 4: {  // header text edit: a token inserted in the header region
          const std::string& t = tokens[pick(std::size(tokens))];
          const std::size_t at = pick(std::min<std::size_t>(bytes.size(), 80) + 1);
          std::vector<std::byte> ins;
          for (char c : t) ins.push_back(static_cast<std::byte>(c));
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
          break;
        }
        default:  // bytes erased
          if (!bytes.empty()) {
            const std::size_t at = pick(bytes.size());
            bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                        bytes.begin() + static_cast<std::ptrdiff_t>(std::min(bytes.size(), at + 1 + pick(8))));
          }
      }
    }
    // Parse from an exactly-sized heap copy so ASan catches any read past the end.
    std::vector<std::byte> exact(bytes.begin(), bytes.end());
    exact.shrink_to_fit();
    try {
      const NpyArray a = parse_npy(exact.data(), exact.size());
      ASSERT_EQ(a.data.size(), a.count() * dtype_size(a.dtype));
      (void)a.values();
      ++parsed;
    } catch (const std::invalid_argument&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000u);
  EXPECT_GT(parsed, 10u);
  std::printf("mutation test: %zu parsed, %zu rejected\n", parsed, rejected);
}

}  // namespace
}  // namespace hydragen::diff
