// hydragen-decode's CUDA runtime against its host runtime: each operation on the same
// bf16-representable inputs, and a captured step replayed twice against two eager steps. GPU only:
// without one every test skips with the reason.
//
// Tolerances. The host computes in fp32; the CUDA runtime computes in fp32 and rounds each output
// once to bf16, which moves it by at most u |value| (u = 2^-8, bf16's unit roundoff: half an ulp).
// The two fp32 computations also differ (summation order, FMA contraction, expf and sqrtf), by a
// few 2^-24 of the magnitudes involved: relative to |value| for the products (rms_norm, swiglu),
// relative to the terms for the sums (rope's a cos - b sin, the GEMM's K products). So an output
// passes within 2u |host| (a bf16 ulp at most: room for the rounding and more) plus, for the sums,
// 2^-20 of their terms' magnitudes (16 fp32 roundings' worth; K 2^-24 of them for a GEMM of K
// products, as a GEMM accumulating in fp32 may round each of them). One more rounding for
// linear's accumulate: cuBLAS may round a w^T to bf16 before adding c (see cuda_runtime.cu), which
// moves it by u |a w^T| more. Copies (embed, V into the cache) and argmax must agree exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decode/cuda_runtime.hpp"
#include "decode/host_runtime.hpp"
#include "decode/rotary.hpp"
#include "device_fixture.hpp"
#include "hydragen/cuda/device.hpp"
#include "hydragen/dtype.hpp"
#include "../runtime_staging.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr double kBf16Roundoff = 1.0 / 256;

// Plain data (ints, pointers) in a runtime's memory, complete on return.
template <typename T>
Buffer upload_raw(const Runtime& rt, const std::vector<T>& values) {
  Buffer buffer(rt.memory(), values.size() * sizeof(T));
  rt.memory().copy_from_host(buffer.data(), values.data(), buffer.bytes());
  rt.memory().synchronize();
  return buffer;
}
std::vector<int> download_ints(const Runtime& rt, const void* src, std::size_t count) {
  rt.synchronize();
  std::vector<int> values(count);
  rt.memory().copy_to_host(values.data(), src, count * sizeof(int));
  return values;
}

// A rotary table in a runtime's memory, and the Rotary over it.
struct StagedRotary {
  Buffer table;
  Rotary rotary;
};
StagedRotary upload_rotary(const Runtime& rt, double theta, int head_dim, int positions) {
  StagedRotary r{upload_raw(rt, rotary_table(theta, head_dim, positions)), {}};
  r.rotary = {static_cast<const float*>(r.table.data()), positions, head_dim};
  return r;
}

// |cuda - host| <= 2u |host| + slack(i) for every element (see the tolerances above).
template <typename Slack>
void expect_bf16_close(const std::vector<float>& cuda, const std::vector<float>& host, Slack slack) {
  ASSERT_EQ(cuda.size(), host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    ASSERT_NEAR(cuda[i], host[i], 2 * kBf16Roundoff * std::abs(host[i]) + slack(i)) << "element " << i;
  }
}
void expect_bf16_close(const std::vector<float>& cuda, const std::vector<float>& host) {
  expect_bf16_close(cuda, host, [](std::size_t) { return 0.0; });
}

class DecodeRuntime : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    cuda = cuda_runtime();
  }
  std::unique_ptr<Runtime> host = host_runtime(), cuda;
};

TEST_F(DecodeRuntime, DescribesItself) {
  EXPECT_EQ(cuda->name(), "cuda bf16 (" + hydragen::cuda::query_device().name + ")");
  EXPECT_EQ(cuda->dtype(), DType::bf16);
  EXPECT_EQ(cuda->memory().name(), "cuda");
  EXPECT_NE(cuda->stream().handle, nullptr);
}

TEST_F(DecodeRuntime, UploadRefusesAValueBf16CannotHold) {
  EXPECT_THAT([&] { cuda->upload({1.0f, 0.1f}); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("upload: value 1 (0.100000) is not a bf16 value")));
  const Buffer z = cuda->zeros(6);
  EXPECT_EQ(cuda->download({z.data(), DType::bf16, 2, 3, 3}), std::vector<float>(6, 0.0f));
}

TEST_F(DecodeRuntime, EmbedCopiesRowsExactly) {
  const std::int64_t vocab = 50, h = 300;
  const std::vector<float> table = random_values(vocab * h, 1);
  const std::vector<int> tokens = {7, 0, 49, 7, 12};
  const std::int64_t t = static_cast<std::int64_t>(tokens.size());
  std::vector<std::vector<float>> got;
  for (Runtime* rt : {host.get(), cuda.get()}) {
    const Staged tb = stage(*rt, table, vocab, h);
    const Staged x = stage(*rt, std::vector<float>(t * h), t, h);
    const Buffer tk = upload_raw(*rt, tokens);
    rt->embed(static_cast<const int*>(tk.data()), tb.m, x.m);
    got.push_back(rt->download(x.m));
  }
  EXPECT_EQ(got[1], got[0]);
}

TEST_F(DecodeRuntime, RmsNormOfAStridedViewMatchesTheHost) {
  // x: rows 1, 3, ... of a [10, 1030] buffer, columns 7..1006 (ld > cols, row_step 2); H = 1000
  // is not a multiple of the block's threads.
  const std::int64_t rows = 5, h = 1000;
  const std::vector<float> all = random_values(10 * 1030, 2, 3), w = random_values(h, 3);
  std::vector<std::vector<float>> x_back, got;
  for (Runtime* rt : {host.get(), cuda.get()}) {
    const Staged x = stage(*rt, all, 10, 1030);
    const Matrix xv = x.m.view(1, rows, 2, 7, h);
    const Buffer wb = rt->upload(w);
    const Staged out = stage(*rt, std::vector<float>(rows * h), rows, h);
    rt->rms_norm(xv, wb.data(), 1e-5f, out.m);
    x_back.push_back(rt->download(xv));
    got.push_back(rt->download(out.m));
  }
  EXPECT_EQ(x_back[1], x_back[0]);  // the strided download
  expect_bf16_close(got[1], got[0]);
}

TEST_F(DecodeRuntime, LinearWithKOf512MatchesTheHost) {
  // a: rows 0, 2, ... of a [14, 520] buffer, its first K = 512 columns (ld 520, row_step 2).
  const std::int64_t t = 7, k = 512, n = 200;
  const std::vector<float> a_all = random_values(14 * 520, 4), w = random_values(n * k, 5, 0.05f),
                           c0 = random_values(t * n, 6, 2);
  for (const bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "c += a w^T" : "c = a w^T");
    std::vector<std::vector<float>> got;
    std::vector<float> av;
    for (Runtime* rt : {host.get(), cuda.get()}) {
      const Staged a = stage(*rt, a_all, 14, 520);
      const Staged ws = stage(*rt, w, n, k);
      const Staged c = stage(*rt, c0, t, n);
      const Matrix a_view = a.m.view(0, t, 2, 0, k);
      rt->linear(a_view, ws.m, c.m, accumulate);
      got.push_back(rt->download(c.m));
      av = rt->download(a_view);
    }
    expect_bf16_close(got[1], got[0], [&](std::size_t i) {
      const std::size_t r = i / n, j = i % n;
      double magnitude = accumulate ? std::abs(c0[i]) : 0;
      for (std::int64_t x = 0; x < k; ++x) magnitude += std::abs(static_cast<double>(av[r * k + x]) * w[j * k + x]);
      const double product_rounding = accumulate ? 2 * kBf16Roundoff * std::abs(got[0][i] - c0[i]) : 0;
      return product_rounding + static_cast<double>(k) * std::ldexp(magnitude, -24);
    });
  }
}

// B = 3 sequences of q_len 2 entering leaves of capacity 8 that then hold 2, 7 and 4 tokens, after a
// prefix of 20000 tokens (large angles), D = 128 as the models have, both runtimes turning by one
// rotary table; and a position past the table, which the CUDA kernel marks NaN.
TEST_F(DecodeRuntime, RopeAppendMatchesTheHost) {
  const int b = 3, q_len = 2, hq = 4, hkv = 2, d = 128, capacity = 8, offset = 20000;
  const double theta = 1e6;
  const std::int64_t t = b * q_len, width = (hq + 2 * hkv) * d, kv_row = hkv * d;
  const std::vector<float> qkv_values = random_values(t * width, 7, 4);
  const std::vector<int> leaf_length = {2, 7, 4};
  const std::vector<int> seq_offset = {0, 300, 7};  // each sequence's group tokens before its leaf
  std::vector<std::vector<float>> q_got, k_got, v_got;
  for (Runtime* rt : {host.get(), cuda.get()}) {
    const Staged qkv = stage(*rt, qkv_values, t, width);
    const Staged q = stage(*rt, std::vector<float>(t * hq * d), t, hq * d);
    const Buffer k = rt->zeros(b * capacity * kv_row), v = rt->zeros(b * capacity * kv_row);
    const std::size_t leaf_bytes = capacity * kv_row * dtype_size(rt->dtype());
    std::vector<void*> k_ptrs, v_ptrs;
    for (int s = 0; s < b; ++s) {
      k_ptrs.push_back(static_cast<char*>(k.data()) + s * leaf_bytes);
      v_ptrs.push_back(static_cast<char*>(v.data()) + s * leaf_bytes);
    }
    const Buffer kp = upload_raw(*rt, k_ptrs), vp = upload_raw(*rt, v_ptrs), ll = upload_raw(*rt, leaf_length);
    const Buffer groups = upload_raw(*rt, seq_offset);
    const CacheWrite cache{static_cast<void* const*>(kp.data()), static_cast<void* const*>(vp.data()),
                           static_cast<const int*>(ll.data()), q_len, offset, static_cast<const int*>(groups.data())};
    const StagedRotary turns = upload_rotary(*rt, theta, d, offset + 300 + capacity);
    rt->rope_append(qkv.m, hq, hkv, turns.rotary, cache, q.m);
    q_got.push_back(rt->download(q.m));
    k_got.push_back(rt->download({k.data(), rt->dtype(), b * capacity, kv_row, kv_row}));
    v_got.push_back(rt->download({v.data(), rt->dtype(), b * capacity, kv_row, kv_row}));
    if (rt != cuda.get()) continue;
    // Sequence 0's tokens are at positions offset and offset + 1: a table of offset + 1 positions
    // turns the first; the second's Q and K are NaN.
    const StagedRotary short_turns = upload_rotary(*rt, theta, d, offset + 1);
    rt->rope_append(qkv.m, hq, hkv, short_turns.rotary, cache, q.m);
    const std::vector<float> marked = rt->download(q.m);
    for (int j = 0; j < hq * d; ++j) {
      ASSERT_EQ(marked[j], q_got.back()[j]) << "token 0, inside the table";
      ASSERT_TRUE(std::isnan(marked[hq * d + j])) << "token 1, past the table: element " << j;
    }
  }
  const Staged odd = stage(*cuda, std::vector<float>(2 * 3 * 24), 2, 3 * 24);
  const StagedRotary turns24 = upload_rotary(*cuda, theta, 24, 4);
  const int two[] = {1, 1};
  void* const leaves[] = {odd.m.data, odd.m.data};  // never written: the call is refused first
  EXPECT_THAT([&] { cuda->rope_append(odd.m, 1, 1, turns24.rotary, {leaves, leaves, two, 1, 0}, odd.m.columns(0, 24)); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("head_dim 24 must be a multiple of 16")));
  // The rotation's two products: at most twice the largest input.
  const double slack = std::ldexp(2 * 4.0, -20);
  expect_bf16_close(q_got[1], q_got[0], [&](std::size_t) { return slack; });
  expect_bf16_close(k_got[1], k_got[0], [&](std::size_t) { return slack; });
  EXPECT_EQ(v_got[1], v_got[0]);
}

TEST_F(DecodeRuntime, SwigluMatchesTheHost) {
  const std::int64_t t = 5, f = 700;
  const std::vector<float> gate_up = random_values(t * 2 * f, 8, 8);
  std::vector<std::vector<float>> got;
  for (Runtime* rt : {host.get(), cuda.get()}) {
    const Staged in = stage(*rt, gate_up, t, 2 * f);
    const Staged out = stage(*rt, std::vector<float>(t * f), t, f);
    rt->swiglu(in.m, out.m);
    got.push_back(rt->download(out.m));
  }
  expect_bf16_close(got[1], got[0]);
}

TEST_F(DecodeRuntime, ArgmaxAgreesExactlyTiesAndNaNIncluded) {
  const std::int64_t t = 5, n = 1000, valid = 900;
  std::vector<float> logits = random_values(t * n, 9);
  logits[0 * n + 700] = logits[0 * n + 300] = 2;    // a tie: the lower column
  logits[1 * n + 950] = 3;                          // past `valid`: ignored
  logits[1 * n + 10] = 2;
  std::fill(logits.begin() + 2 * n, logits.begin() + 3 * n, 0.5f);  // all equal: column 0
  logits[3 * n + 0] = logits[3 * n + 5] = std::numeric_limits<float>::quiet_NaN();  // NaN never wins
  logits[3 * n + 600] = 2;
  std::fill(logits.begin() + 4 * n, logits.begin() + 5 * n, std::numeric_limits<float>::quiet_NaN());
  std::vector<std::vector<int>> got;
  for (Runtime* rt : {host.get(), cuda.get()}) {
    const Staged l = stage(*rt, logits, t, n);
    const Buffer tokens = upload_raw(*rt, std::vector<int>(t, -1));
    rt->argmax(l.m, valid, static_cast<int*>(tokens.data()));
    got.push_back(download_ints(*rt, tokens.data(), t));
  }
  EXPECT_EQ(got[0], (std::vector<int>{300, 10, 0, 600, 0}));
  EXPECT_EQ(got[1], got[0]);
}

TEST_F(DecodeRuntime, AdvanceAndCopyInStreamOrder) {
  const Buffer lengths = upload_raw(*cuda, std::vector<int>{3, 5, 7});
  const Buffer copied(cuda->memory(), 3 * sizeof(int));
  auto* p = static_cast<int*>(lengths.data());
  cuda->advance(p, 2, 4);
  cuda->copy(copied.data(), p, 3 * sizeof(int));
  cuda->advance(p, 3, 1);
  EXPECT_EQ(download_ints(*cuda, copied.data(), 3), (std::vector<int>{7, 9, 7}));
  EXPECT_EQ(download_ints(*cuda, p, 3), (std::vector<int>{8, 10, 8}));
}

// One decode step of a one-layer model in miniature, its state resettable: what a captured graph
// must replay exactly as the eager calls ran.
class MiniStep {
 public:
  static constexpr int kSeqs = 4, kVocab = 64, kHidden = 128, kQHeads = 2, kKvHeads = 1, kHeadDim = 64, kCapacity = 8;
  static constexpr int kPositionOffset = 5;
  static constexpr std::int64_t kQkv = (kQHeads + 2 * kKvHeads) * kHeadDim, kKvRow = kKvHeads * kHeadDim;

  explicit MiniStep(Runtime& rt)
      : rt_(rt),
        table_(stage(rt, random_values(kVocab * kHidden, 10), kVocab, kHidden)),
        norm_(rt.upload(random_values(kHidden, 11, 2))),
        wqkv_(stage(rt, random_values(kQkv * kHidden, 12, 0.1f), kQkv, kHidden)),
        wo_(stage(rt, random_values(kHidden * kQHeads * kHeadDim, 13, 0.1f), kHidden, kQHeads * kHeadDim)),
        lm_head_(stage(rt, random_values(kVocab * kHidden, 14, 0.1f), kVocab, kHidden)),
        x_(stage(rt, std::vector<float>(kSeqs * kHidden), kSeqs, kHidden)),
        h_(stage(rt, std::vector<float>(kSeqs * kHidden), kSeqs, kHidden)),
        qkv_(stage(rt, std::vector<float>(kSeqs * kQkv), kSeqs, kQkv)),
        q_(stage(rt, std::vector<float>(kSeqs * kQHeads * kHeadDim), kSeqs, kQHeads * kHeadDim)),
        logits_(stage(rt, std::vector<float>(kSeqs * kVocab), kSeqs, kVocab)),
        k_(rt.zeros(kSeqs * kCapacity * kKvRow)),
        v_(rt.zeros(kSeqs * kCapacity * kKvRow)),
        tokens_(rt.memory(), kSeqs * sizeof(int)),
        leaf_length_(rt.memory(), kSeqs * sizeof(int)) {
    std::vector<void*> k_ptrs, v_ptrs;
    const std::size_t leaf_bytes = kCapacity * kKvRow * dtype_size(rt.dtype());
    for (int s = 0; s < kSeqs; ++s) {
      k_ptrs.push_back(static_cast<char*>(k_.data()) + s * leaf_bytes);
      v_ptrs.push_back(static_cast<char*>(v_.data()) + s * leaf_bytes);
    }
    k_ptrs_ = upload_raw(rt, k_ptrs);
    v_ptrs_ = upload_raw(rt, v_ptrs);
    rotary_ = upload_rotary(rt, 1e4, kHeadDim, kPositionOffset + kCapacity);
    reset();
  }

  void reset() {
    rt_.synchronize();
    rt_.memory().copy_from_host(tokens_.data(), std::vector<int>{1, 5, 9, 63}.data(), tokens_.bytes());
    rt_.memory().copy_from_host(leaf_length_.data(), std::vector<int>{0, 1, 2, 3}.data(), leaf_length_.bytes());
    rt_.memory().fill(k_.data(), 0, k_.bytes());
    rt_.memory().fill(v_.data(), 0, v_.bytes());
    rt_.memory().synchronize();
  }

  // The next token enters the cache, goes through the layer, and its argmax becomes the next input.
  void enqueue() {
    auto* tokens = static_cast<int*>(tokens_.data());
    auto* lengths = static_cast<int*>(leaf_length_.data());
    rt_.advance(lengths, kSeqs, 1);
    rt_.embed(tokens, table_.m, x_.m);
    rt_.rms_norm(x_.m, norm_.data(), 1e-5f, h_.m);
    rt_.linear(h_.m, wqkv_.m, qkv_.m, false);
    const CacheWrite cache{static_cast<void* const*>(k_ptrs_.data()), static_cast<void* const*>(v_ptrs_.data()), lengths, 1,
                           kPositionOffset};
    rt_.rope_append(qkv_.m, kQHeads, kKvHeads, rotary_.rotary, cache, q_.m);
    rt_.linear(q_.m, wo_.m, x_.m, true);
    rt_.linear(x_.m, lm_head_.m, logits_.m, false);
    rt_.argmax(logits_.m, kVocab - 3, tokens);
  }

  std::vector<int> leaf_lengths() const { return download_ints(rt_, leaf_length_.data(), kSeqs); }
  // Everything the steps wrote, as floats.
  std::vector<float> outputs() const {
    std::vector<float> all;
    for (const Matrix& m : {x_.m, q_.m, logits_.m, Matrix{k_.data(), rt_.dtype(), kSeqs * kCapacity, kKvRow, kKvRow},
                            Matrix{v_.data(), rt_.dtype(), kSeqs * kCapacity, kKvRow, kKvRow}}) {
      const std::vector<float> part = rt_.download(m);
      all.insert(all.end(), part.begin(), part.end());
    }
    for (const int token : download_ints(rt_, tokens_.data(), kSeqs)) all.push_back(static_cast<float>(token));
    return all;
  }

 private:
  Runtime& rt_;
  Staged table_;
  Buffer norm_;
  Staged wqkv_, wo_, lm_head_, x_, h_, qkv_, q_, logits_;
  Buffer k_, v_, tokens_, leaf_length_, k_ptrs_, v_ptrs_;
  StagedRotary rotary_;
};

TEST_F(DecodeRuntime, AGraphReplayedTwiceEqualsTwoEagerStepsBitForBit) {
  MiniStep step(*cuda);
  step.enqueue();
  step.enqueue();
  const std::vector<float> eager = step.outputs();
  EXPECT_EQ(step.leaf_lengths(), (std::vector<int>{2, 3, 4, 5}));

  step.reset();
  const auto graph = cuda->capture([&] { step.enqueue(); });
  EXPECT_EQ(step.leaf_lengths(), (std::vector<int>{0, 1, 2, 3})) << "capturing ran the step";
  graph->replay();
  graph->replay();
  EXPECT_EQ(step.leaf_lengths(), (std::vector<int>{2, 3, 4, 5})) << "advance ran twice";
  EXPECT_EQ(step.outputs(), eager);
}

TEST_F(DecodeRuntime, ACaptureWhoseStepThrowsLeavesTheStreamUsable) {
  const Buffer lengths = upload_raw(*cuda, std::vector<int>{3});
  auto* p = static_cast<int*>(lengths.data());
  const Staged a = stage(*cuda, random_values(2 * 4, 15), 2, 4);
  EXPECT_THAT([&] {
    cuda->capture([&] {
      cuda->advance(p, 1, 1);
      cuda->linear(a.m, a.m, a.m, false);  // c is 2x4, a a^T 2x2
    });
  }, ThrowsMessage<std::invalid_argument>(HasSubstr("linear: c is 2x4, expected 2x2")));
  cuda->advance(p, 1, 10);
  EXPECT_EQ(download_ints(*cuda, p, 1), std::vector<int>{13});  // the captured advance never ran
}

}  // namespace
}  // namespace hydragen::decode
