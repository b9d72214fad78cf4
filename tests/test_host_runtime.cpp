// hydragen-decode's host runtime: each operation against a plain fp64 loop on small random inputs
// (strided views included), the rotary embedding against its formula, argmax's ties, capture and
// replay, and the argument checks both runtimes share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "decode/host_runtime.hpp"
#include "decode/rotary.hpp"
#include "decode/runtime_checks.hpp"
#include "hydragen/dtype.hpp"
#include "runtime_staging.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class HostRuntime : public ::testing::Test {
 protected:
  std::unique_ptr<Runtime> rt = host_runtime();
};

TEST_F(HostRuntime, DescribesItself) {
  EXPECT_EQ(rt->name(), "host fp32");
  EXPECT_EQ(rt->dtype(), DType::fp32);
  EXPECT_EQ(rt->memory().name(), "host");
  EXPECT_EQ(rt->stream().handle, nullptr);
}

TEST_F(HostRuntime, UploadZerosAndADownloadThatHonorsLd) {
  const Staged s = stage(*rt, {1, 2, 3, -1, -1, 4, 5, 6, -1, -1}, 2, 3, 5);
  EXPECT_EQ(rt->download(s.m), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rt->download(s.m.view(1, 1, 1, 1, 2)), (std::vector<float>{5, 6}));
  const Buffer z = rt->zeros(4);
  EXPECT_EQ(rt->download({z.data(), DType::fp32, 2, 2, 2}), std::vector<float>(4, 0.0f));
}

TEST_F(HostRuntime, EmbedCopiesTheTokensRows) {
  const std::vector<float> table = random_values(4 * 6, 1);
  const Staged t = stage(*rt, table, 4, 6);
  const Staged x = stage(*rt, std::vector<float>(3 * 6), 3, 6);
  const std::vector<int> tokens = {2, 0, 2};
  rt->embed(tokens.data(), t.m, x.m);
  const std::vector<float> got = rt->download(x.m);
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 6; ++j) EXPECT_EQ(got[r * 6 + j], table[tokens[r] * 6 + j]) << r << "," << j;
  }
  const std::vector<int> outside = {1, 4, 0};
  EXPECT_THAT([&] { rt->embed(outside.data(), t.m, x.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("embed: token 1 is 4, not in [0, 4)")));
}

TEST_F(HostRuntime, RmsNormOfAStridedViewMatchesAnFp64Loop) {
  // x: rows 1, 3, 5 of a [6, 40] buffer, columns 3..34 (ld 80 > cols 32, row_step 2).
  const std::int64_t rows = 3, h = 32;
  const std::vector<float> all = random_values(6 * 40, 2, 2), w = random_values(h, 3);
  const Staged x = stage(*rt, all, 6, 40);
  const Matrix xv = x.m.view(1, rows, 2, 3, h);
  const Buffer wb = rt->upload(w);
  const Staged out = stage(*rt, std::vector<float>(rows * h), rows, h);
  const float eps = 1e-5f;
  rt->rms_norm(xv, wb.data(), eps, out.m);
  const std::vector<float> in = rt->download(xv), got = rt->download(out.m);
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (std::int64_t j = 0; j < h; ++j) squares += static_cast<double>(in[r * h + j]) * in[r * h + j];
    const double scale = 1 / std::sqrt(squares / static_cast<double>(h) + eps);
    for (std::int64_t j = 0; j < h; ++j) {
      const double expected = in[r * h + j] * scale * w[j];
      // fp32: a sum of 32 squares and three roundings, each a few 2^-24 relative.
      EXPECT_NEAR(got[r * h + j], expected, 1e-6 * std::abs(expected)) << r << "," << j;
    }
  }
}

TEST_F(HostRuntime, LinearOfAStridedViewMatchesAnFp64Loop) {
  // a: rows 0, 2, 4, 6 of a [8, 70] buffer, columns 5..68 (ld 70 > K 64, row_step 2); w [N, K].
  const std::int64_t t = 4, k = 64, n = 24;
  const Staged a_all = stage(*rt, random_values(8 * 70, 4), 8, 70);
  const Matrix a = a_all.m.view(0, t, 2, 5, k);
  const std::vector<float> w = random_values(n * k, 5), c0 = random_values(t * n, 6, 4);
  const Staged ws = stage(*rt, w, n, k);
  const std::vector<float> av = rt->download(a);
  for (const bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "c += a w^T" : "c = a w^T");
    const Staged c = stage(*rt, c0, t, n);
    rt->linear(a, ws.m, c.m, accumulate);
    const std::vector<float> got = rt->download(c.m);
    for (std::int64_t r = 0; r < t; ++r) {
      for (std::int64_t j = 0; j < n; ++j) {
        double expected = accumulate ? c0[r * n + j] : 0, magnitude = std::abs(expected);
        for (std::int64_t i = 0; i < k; ++i) {
          expected += static_cast<double>(av[r * k + i]) * w[j * k + i];
          magnitude += std::abs(static_cast<double>(av[r * k + i]) * w[j * k + i]);
        }
        // fp32 accumulation of K + 1 terms: at most (K + 1) 2^-24 of their magnitudes.
        EXPECT_NEAR(got[r * n + j], expected, static_cast<double>(k + 1) * std::ldexp(magnitude, -24)) << r << "," << j;
      }
    }
  }
}

// B = 2 sequences of q_len 3 tokens entering leaves of capacity 6 that then hold 3 and 5 tokens,
// after a prefix of 100: tokens at positions 100..102 and 102..104.
TEST_F(HostRuntime, RopeAppendRotatesByTheFormulaAndFillsTheCacheSlots) {
  const int b = 2, q_len = 3, hq = 4, hkv = 2, d = 8, capacity = 6, offset = 100;
  const double theta = 10000;
  const std::int64_t t = b * q_len, width = (hq + 2 * hkv) * d, kv_row = hkv * d;
  const std::vector<float> qkv_values = random_values(t * width, 7);
  const Staged qkv = stage(*rt, qkv_values, t, width);
  const Staged q = stage(*rt, std::vector<float>(t * hq * d), t, hq * d);
  std::vector<Buffer> k, v;
  std::vector<void*> k_ptrs, v_ptrs;
  for (int s = 0; s < b; ++s) {
    k_ptrs.push_back(k.emplace_back(rt->zeros(capacity * kv_row)).data());
    v_ptrs.push_back(v.emplace_back(rt->zeros(capacity * kv_row)).data());
  }
  const std::vector<int> leaf_length = {3, 5};
  const std::vector<float> table = rotary_table(theta, d, offset + capacity);
  const Rotary rotary{table.data(), offset + capacity, d};
  rt->rope_append(qkv.m, hq, hkv, rotary, {k_ptrs.data(), v_ptrs.data(), leaf_length.data(), q_len, offset}, q.m);

  const std::vector<float> got_q = rt->download(q.m);
  std::vector<std::vector<float>> got_k, got_v;
  for (int s = 0; s < b; ++s) {
    got_k.push_back(rt->download({k_ptrs[s], DType::fp32, capacity, kv_row, kv_row}));
    got_v.push_back(rt->download({v_ptrs[s], DType::fp32, capacity, kv_row, kv_row}));
  }
  // Head h of token r, rotated: element i with i + D/2 by position * theta^(-2i/D), in fp64.
  auto expect_rotated = [&](const float* got, std::int64_t r, int head, double position) {
    const float* x = &qkv_values[r * width + head * d];
    for (int i = 0; i < d / 2; ++i) {
      const double angle = position * std::pow(theta, -2.0 * i / d), a = x[i], c = x[i + d / 2];
      // fp32: cos and sin rounded, two products and a sum, each 2^-24 relative.
      const double tolerance = 4 * std::ldexp(std::abs(a) + std::abs(c), -24);
      EXPECT_NEAR(got[i], a * std::cos(angle) - c * std::sin(angle), tolerance) << "token " << r << " head " << head;
      EXPECT_NEAR(got[i + d / 2], c * std::cos(angle) + a * std::sin(angle), tolerance) << "token " << r << " head " << head;
    }
  };
  for (std::int64_t r = 0; r < t; ++r) {
    const int s = static_cast<int>(r / q_len), index = leaf_length[s] - q_len + static_cast<int>(r % q_len);
    const double position = index + offset;
    for (int h = 0; h < hq; ++h) expect_rotated(&got_q[r * hq * d + h * d], r, h, position);
    for (int h = 0; h < hkv; ++h) {
      expect_rotated(&got_k[s][index * kv_row + h * d], r, hq + h, position);
      for (int i = 0; i < d; ++i) EXPECT_EQ(got_v[s][index * kv_row + h * d + i], qkv_values[r * width + (hq + hkv + h) * d + i]);
    }
  }
  // The slots before this step's tokens, and after the leaf's end, stay as they were.
  for (int s = 0; s < b; ++s) {
    for (int index = 0; index < capacity; ++index) {
      if (index >= leaf_length[s] - q_len && index < leaf_length[s]) continue;
      for (std::int64_t j = 0; j < kv_row; ++j) {
        EXPECT_EQ(got_k[s][index * kv_row + j], 0.0f) << "sequence " << s << " slot " << index;
        EXPECT_EQ(got_v[s][index * kv_row + j], 0.0f) << "sequence " << s << " slot " << index;
      }
    }
  }

  const std::vector<int> too_short = {3, 2};
  EXPECT_THAT([&] { rt->rope_append(qkv.m, hq, hkv, rotary, {k_ptrs.data(), v_ptrs.data(), too_short.data(), q_len, 0}, q.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rope_append: sequence 1's leaf holds 2 tokens, fewer than q_len 3")));
  const Rotary short_table{table.data(), offset + 4, d};  // sequence 1's last token is at position offset + 4
  EXPECT_THAT([&] { rt->rope_append(qkv.m, hq, hkv, short_table, {k_ptrs.data(), v_ptrs.data(), leaf_length.data(), q_len, offset}, q.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("sequence 1's tokens reach position 104, outside the rotary table's [0, 104)")));
}

TEST_F(HostRuntime, SwigluMatchesAnFp64Loop) {
  const std::int64_t t = 3, f = 20;
  const std::vector<float> gate_up = random_values(t * 2 * f, 8, 6);
  const Staged in = stage(*rt, gate_up, t, 2 * f);
  const Staged out = stage(*rt, std::vector<float>(t * f), t, f);
  rt->swiglu(in.m, out.m);
  const std::vector<float> got = rt->download(out.m);
  for (std::int64_t r = 0; r < t; ++r) {
    for (std::int64_t j = 0; j < f; ++j) {
      const double g = gate_up[r * 2 * f + j], u = gate_up[r * 2 * f + f + j];
      const double expected = g / (1 + std::exp(-g)) * u;
      EXPECT_NEAR(got[r * f + j], expected, 1e-6 * std::abs(expected)) << r << "," << j;  // a few fp32 roundings
    }
  }
}

TEST_F(HostRuntime, ArgmaxTakesTheLowestOfTiesAmongTheValidColumns) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Staged logits = stage(*rt,
                              {1, 5, 5, 2, 9,     // a tie at 1 and 2; column 4 is past `valid`
                               3, 3, 3, 3, 3,     // all equal
                               nan, -1, 4, 4, 0,  // NaN never wins
                               nan, nan, nan, nan, 7},
                              4, 5);
  std::vector<int> tokens(4, -1);
  rt->argmax(logits.m, 4, tokens.data());
  EXPECT_EQ(tokens, (std::vector<int>{1, 0, 2, 0}));
  rt->argmax(logits.m, 5, tokens.data());
  EXPECT_EQ(tokens, (std::vector<int>{4, 0, 2, 4}));
}

TEST_F(HostRuntime, AdvanceAndCopy) {
  std::vector<int> leaf_length = {3, 5, 7};
  rt->advance(leaf_length.data(), 2, 4);
  EXPECT_EQ(leaf_length, (std::vector<int>{7, 9, 7}));
  std::vector<int> dst(3);
  rt->copy(dst.data(), leaf_length.data(), 3 * sizeof(int));
  EXPECT_EQ(dst, leaf_length);
}

TEST_F(HostRuntime, CaptureRunsNothingAndEachReplayRunsTheStep) {
  std::vector<int> leaf_length = {0, 10};
  int runs = 0;
  const auto graph = rt->capture([&] {
    ++runs;
    rt->advance(leaf_length.data(), 2, 1);
  });
  EXPECT_EQ(runs, 0);
  graph->replay();
  graph->replay();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(leaf_length, (std::vector<int>{2, 12}));
}

TEST_F(HostRuntime, RefusesOperandsThatDoNotAgreeNamingTheOperationAndOperand) {
  const Staged a = stage(*rt, random_values(2 * 4, 9), 2, 4);
  const Staged w = stage(*rt, random_values(3 * 5, 10), 3, 5);
  const Staged c = stage(*rt, std::vector<float>(2 * 3), 2, 3);
  EXPECT_THAT([&] { rt->linear(a.m, w.m, c.m, false); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("linear: w is 3x5, expected 3x4 (w's rows x a's columns)")));
  EXPECT_THAT([&] { rt->linear(a.m, a.m.columns(0, 4), c.m, false); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("linear: c is 2x3, expected 2x2 (a's rows x w's rows)")));
  EXPECT_THAT([&] { rt->linear({a.m.data, DType::fp32, 2, 4, 3}, w.m, c.m, false); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("linear: a has ld 3 < cols 4")));
  EXPECT_THAT([&] { rt->rms_norm(a.m, w.buffer.data(), 1e-5f, c.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rms_norm: out is 2x3, expected 2x4 (x's shape)")));
  EXPECT_THAT([&] { rt->rms_norm(a.m, nullptr, 1e-5f, a.m); }, ThrowsMessage<std::invalid_argument>(HasSubstr("rms_norm: w is null")));
  const std::vector<int> tokens = {0, 1};
  EXPECT_THAT([&] { rt->embed(tokens.data(), {w.m.data, DType::bf16, 3, 5, 5}, c.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("embed: table is bf16, the runtime's dtype is fp32")));
  EXPECT_THAT([&] { rt->swiglu(w.m, c.m); }, ThrowsMessage<std::invalid_argument>(HasSubstr("swiglu: gate_up has 5 columns")));
  EXPECT_THAT([&] { rt->swiglu(a.m, c.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("swiglu: out is 2x3, expected 2x2")));
  std::vector<int> out(2);
  EXPECT_THAT([&] { rt->argmax(a.m, 0, out.data()); }, ThrowsMessage<std::invalid_argument>(HasSubstr("argmax: valid 0")));
  EXPECT_THAT([&] { rt->argmax(a.m, 5, out.data()); }, ThrowsMessage<std::invalid_argument>(HasSubstr("argmax: valid 5")));
  EXPECT_THAT([&] { rt->advance(nullptr, 2, 1); }, ThrowsMessage<std::invalid_argument>(HasSubstr("advance: leaf_length is null")));
  void* leaf = c.m.data;
  const int length = 1;
  const CacheWrite cache{&leaf, &leaf, &length, 1, 0};
  const std::vector<float> turns = rotary_table(1e4, 2, 4);
  EXPECT_THAT([&] { rt->rope_append(c.m, 1, 1, {turns.data(), 4, 2}, cache, a.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rope_append: qkv is 2x3, expected 2x6")));
  EXPECT_THAT([&] { rt->rope_append(c.m, 1, 1, {turns.data(), 4, 1}, cache, a.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rope_append: rotary.head_dim 1 is odd")));
  EXPECT_THAT([&] { rt->rope_append(c.m, 1, 1, {nullptr, 4, 2}, cache, a.m); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rope_append: rotary.table is null")));
  EXPECT_THAT([&] { rt->zeros(-1); }, ThrowsMessage<std::invalid_argument>(HasSubstr("zeros: count -1 is negative")));
}

// What a bf16 runtime uploads (on all host threads): each value's bits, and the first value that is
// not exactly a bf16 named, whichever thread met it.
TEST(ExactBf16Bits, GivesEachValuesBitsAndNamesTheFirstInexactOne) {
  std::vector<float> values(100000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = bf16_bits_to_float(static_cast<std::uint16_t>(i * 7919u));
  const std::vector<std::uint16_t> bits = exact_bf16_bits(values);
  ASSERT_EQ(bits.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) {
      ASSERT_EQ(bf16_bits_to_float(bits[i]), values[i]) << i;
    }
  }
  values[90000] = 0.1f;
  values[60001] = 1.0f + 1.0f / 1024;  // 2^-10 below bf16's 2^-7 spacing at 1: not a bf16
  EXPECT_THAT([&] { exact_bf16_bits(values); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("upload: value 60001 (1.000977) is not a bf16 value")));
}

}  // namespace
}  // namespace hydragen::decode
