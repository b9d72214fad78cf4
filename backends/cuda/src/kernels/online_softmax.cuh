#pragma once
// The online softmax of the two rows a lane holds in a tensor-core accumulator (rows g = lane / 4
// and g + 8 of its warp's 16; mma.sync m16n8 and wgmma m64nN share the layout): fragment j of a
// row-pair array holds columns 8j + 2t + {0, 1} (t = lane % 4) as [4j + e] for the first row and
// [4j + 2 + e] for the second. Used by both tensor-core segment-attention kernels.
#include <cmath>

#include "hydragen/cuda/element.cuh"
#include "mufu.cuh"
#include "row_end.cuh"

namespace hydragen::cuda {

// What both online softmaxes keep for a lane's two rows, whose scores are spread over the lanes that
// an xor by MASKS reaches (a fragment row's 4 lanes; the token product's 8), and the steps they share.
// Value e of each 4-value fragment of the output accumulator belongs to row (e >> ROW_BIT) & 1.
template <int ROW_BIT, int... MASKS>
struct RowPairState {
  float m[2] = {-INFINITY, -INFINITY};  // running max of the scaled scores, log2 units
  float l[2] = {0.f, 0.f};              // this lane's share of the running sums

  // Row r's tile seen: mx, this lane's max of its raw scores, taken over the row's lanes; the new
  // running max, the factor for what was accumulated before (alpha), and the base the tile's
  // probabilities are taken against.
  __device__ __forceinline__ float advance(int r, float mx, float scale_log2, float& alpha) {
    ((mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, MASKS))), ...);
    const float next = fmaxf(m[r], mx * scale_log2);
    // A row that has seen nothing yet keeps base 0, so exp2(-inf - 0) = 0 and no NaN appears.
    const float base = next == -INFINITY ? 0.f : next;
    alpha = exp2_approx(m[r] - base);
    m[r] = next;
    return base;
  }

  // After the last tile: each row's 1 / sum (0 for a row that saw nothing) and LSE (natural log,
  // -inf for nothing). Call on all lanes of a row.
  __device__ __forceinline__ void finish(float (&inv)[2], float (&lse)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      ((l[r] += __shfl_xor_sync(0xffffffffu, l[r], MASKS)), ...);
      inv[r] = row_inv(l[r]);
      lse[r] = row_lse(m[r], l[r]);
    }
  }

  // The output accumulated so far, to the rows' new maxima. Skipped when no row of the warp moved its
  // max (most tiles once the max has settled): the multiplies would cost a quarter as many issue
  // slots as the softmax itself. Call on all lanes.
  template <int N>
  static __device__ __forceinline__ void rescale(float (&acc)[N], const float (&alpha)[2]) {
    if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] *= alpha[(i >> ROW_BIT) & 1];
  }
};

// The mma.sync A fragment of 16 tokens (probabilities of fragments 2k and 2k + 1) as 16-bit pairs.
template <typename T, int NS>
__device__ __forceinline__ void probabilities_as_a(const float (&s)[4 * NS], int k, unsigned (&a)[4]) {
  a[0] = pack2<T>(s[8 * k + 0], s[8 * k + 1]);
  a[1] = pack2<T>(s[8 * k + 2], s[8 * k + 3]);
  a[2] = pack2<T>(s[8 * k + 4], s[8 * k + 5]);
  a[3] = pack2<T>(s[8 * k + 6], s[8 * k + 7]);
}

template <int NS>  // 8-token fragments of a score tile
struct RowPairSoftmax : RowPairState<1, 1, 2> {  // [4j + 2r + e] is row r's; a row's 4 lanes

  // s: raw scores, token of fragment j, element e at position pos0 + 8j + e (pos0 includes 2t).
  // Positions >= limit[r] are masked when `mask` (a tile past a row's limit); s becomes the tile's
  // unnormalized probabilities (relative to the running max). Returns in alpha the factor by which
  // the output accumulated so far must be rescaled (rescale), which the caller may apply later: the
  // wgmma kernel does so once the previous tile's P V product has landed.
  //
  // Issue slots are the budget here: in the wgmma kernel one warpgroup's softmax must fit in the
  // time the other's matrix products take. Per score: one max, one FFMA (scale and max subtracted
  // together; the max is taken on raw scores, the scale being positive), one MUFU ex2, one add to
  // the row sum; masking only on the tiles that need it.
  __device__ __forceinline__ void update(float (&s)[4 * NS], int pos0, const int (&limit)[2], float scale_log2,
                                         bool mask, float (&alpha)[2]) {
    if (mask) {
#pragma unroll
      for (int j = 0; j < NS; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (pos0 + 8 * j + i % 2 >= limit[i / 2]) s[4 * j + i] = -INFINITY;
        }
      }
    }
    // The max and the sum in kChains independent chains per row, combined at the end: one chain of
    // 2 NS dependent instructions would leave the warp waiting on each result (its SM quarter has
    // only the other warpgroup's warp to issue meanwhile).
    constexpr int kChains = NS >= 4 ? 4 : NS;
    float mx[2][kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      mx[0][c] = fmaxf(s[4 * c + 0], s[4 * c + 1]);
      mx[1][c] = fmaxf(s[4 * c + 2], s[4 * c + 3]);
    }
#pragma unroll
    for (int j = kChains; j < NS; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) mx[i / 2][j % kChains] = fmaxf(mx[i / 2][j % kChains], s[4 * j + i]);
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int c = 1; c < kChains; ++c) mx[r][0] = fmaxf(mx[r][0], mx[r][c]);
      base[r] = advance(r, mx[r][0], scale_log2, alpha[r]);
    }
    float sum[2][kChains] = {};
#pragma unroll
    for (int j = 0; j < NS; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float& x = s[4 * j + i];
        x = exp2_approx(fmaf(x, scale_log2, -base[i / 2]));
        sum[i / 2][j % kChains] += x;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int c = 1; c < kChains; ++c) sum[r][0] += sum[r][c];
      l[r] = fmaf(l[r], alpha[r], sum[r][0]);
    }
  }

  // The tile's probabilities against the running maxima as they stand, as P's A fragments (`pa`, of
  // probabilities_as_a) and into the row sums, where no row's max over the tile passes its running max
  // by more than kDrift (log2 units): the exps then need not wait for the tile's max, which is taken
  // beside them, and no probability exceeds 2^kDrift. Returns false where some row's does, leaving the
  // state as it was and `pa` overwritten: the caller then runs update and probabilities_as_a. Call on
  // all lanes, on a tile without masking after a first one (running maxima finite).
  static constexpr float kDrift = 8.f;
  template <typename T>
  __device__ __forceinline__ bool update_within_drift(const float (&s)[4 * NS], float scale_log2, unsigned (&pa)[NS / 2][4],
                                                      float (&alpha)[2]) {
    constexpr int kChains = NS >= 4 ? 4 : NS;
    float mx[2][kChains], sum[2][kChains] = {};
#pragma unroll
    for (int k = 0; k < NS / 2; ++k) {
      float x[8];  // fragments 2k and 2k + 1: one A fragment's values
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int j = 2 * k + i / 4, e = i % 4;
        float& chain = mx[e / 2][j % kChains];
        chain = j < kChains && e % 2 == 0 ? s[4 * j + e] : fmaxf(chain, s[4 * j + e]);
        x[i] = exp2_approx(fmaf(s[4 * j + e], scale_log2, -m[e / 2]));
        sum[e / 2][j % kChains] += x[i];
      }
      probabilities_as_a<T, 2>(x, 0, pa[k]);
    }
    bool moved = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int c = 1; c < kChains; ++c) mx[r][0] = fmaxf(mx[r][0], mx[r][c]);
      moved |= mx[r][0] * scale_log2 > m[r] + kDrift;
    }
    if (__any_sync(0xffffffffu, moved)) return false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int c = 1; c < kChains; ++c) sum[r][0] += sum[r][c];
      l[r] += sum[r][0];
      alpha[r] = 1.f;
    }
    return true;
  }
};

// The online softmax of the token product's scores (NarrowProduct::tokens): S^T = K Q^T over a tile of
// 16 tokens, whose accumulator gives lane 4g + t tokens g ([0], [1]) and g + 8 ([2], [3]) of rows 2t
// ([0], [2]) and 2t + 1 ([1], [3]); a row's tokens are spread over the 8 lanes of its t (lanes 4
// apart). The same steps as RowPairSoftmax, its reductions over those 8 lanes.
struct TokenRowSoftmax : RowPairState<0, 4, 8, 16> {  // O^T's [4j + 2e + r] is row 2t + r's; a row's 8 lanes
  // s: raw scores; token g of the tile at position pos0 (pos0 + 8 for g + 8). Otherwise as
  // RowPairSoftmax::update.
  __device__ __forceinline__ void update(float (&s)[4], int pos0, const int (&limit)[2], float scale_log2, bool mask,
                                         float (&alpha)[2]) {
    if (mask) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (pos0 + 8 * (i / 2) >= limit[i % 2]) s[i] = -INFINITY;
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) base[r] = advance(r, fmaxf(s[r], s[r + 2]), scale_log2, alpha[r]);
#pragma unroll
    for (int i = 0; i < 4; ++i) s[i] = exp2_approx(fmaf(s[i], scale_log2, -base[i % 2]));
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = fmaf(l[r], alpha[r], s[r] + s[r + 2]);
  }
};

}  // namespace hydragen::cuda
