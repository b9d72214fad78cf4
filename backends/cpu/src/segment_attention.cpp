#include "segment_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hydragen/merge.hpp"
#include "widen.hpp"

namespace hydragen::cpu {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using TileView = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

// Tokens [begin, begin + n) of one KV head as an n x D fp32 matrix: fp32 storage is viewed in
// place (row stride Hkv * D), 16-bit storage is widened into `buffer`.
TileView load_tile(const KvSlice& s, long long begin, int n, RowMatrix& buffer) {
  const long long row = static_cast<long long>(s.kv_heads) * s.head_dim;  // elements per token
  if (s.dtype == DType::fp32) {
    return TileView(static_cast<const float*>(s.data) + begin * row + s.kv_head * s.head_dim, n, s.head_dim,
                    Eigen::OuterStride<>(row));
  }
  const auto elem = static_cast<long long>(dtype_size(s.dtype));
  const auto* base = static_cast<const unsigned char*>(s.data) + (begin * row + s.kv_head * s.head_dim) * elem;
  dispatch_storage(s.dtype, [&](auto tag) {
    for (int t = 0; t < n; ++t) widen_row<decltype(tag)>(base + t * row * elem, buffer.row(t).data(), s.head_dim);
  });
  return TileView(buffer.data(), n, s.head_dim, Eigen::OuterStride<>(s.head_dim));
}
}  // namespace

void Workspace::reserve(int rows, int head_dim) {
  k.resize(kTileTokens, head_dim);
  v.resize(kTileTokens, head_dim);
  scores.resize(rows, kTileTokens);
  tile_o.resize(rows, head_dim);
  tile_lse.resize(rows);
}

void Partial::reset(int rows, int head_dim) {
  o.setZero(rows, head_dim);
  lse.setConstant(rows, kNegInf);
}

void attend_tokens(const RowMatrix& q, const KvSlice& k, const KvSlice& v, long long begin, long long end,
                   const std::vector<long long>& limit, float scale, Partial& acc, Workspace& ws) {
  const auto rows = static_cast<int>(q.rows());
  const int d = static_cast<int>(q.cols());
  for (long long t0 = begin; t0 < end; t0 += kTileTokens) {
    const int n = static_cast<int>(std::min<long long>(kTileTokens, end - t0));
    const TileView k_tile = load_tile(k, t0, n, ws.k);
    const TileView v_tile = load_tile(v, t0, n, ws.v);
    auto scores = ws.scores.topLeftCorner(rows, n);
    scores.noalias() = q * k_tile.transpose();
    for (int r = 0; r < rows; ++r) {
      const long long visible = std::clamp<long long>(limit[r] - t0, 0, n);  // causal leaf: a prefix of the tile
      auto s = scores.row(r);
      if (visible == 0) {  // an empty partial: zero weights, LSE -inf, so the merge is the identity
        s.setZero();
        ws.tile_lse[r] = kNegInf;
        continue;
      }
      s.tail(n - visible).setConstant(kNegInf);
      s.head(visible) *= scale;
      const float m = s.head(visible).maxCoeff();
      s = (s.array() - m).exp().matrix();  // masked entries become exactly 0
      const float sum = s.sum();
      s /= sum;
      ws.tile_lse[r] = m + std::log(sum);
    }
    auto tile_o = ws.tile_o.topRows(rows);
    tile_o.noalias() = scores * v_tile;  // P V as one GEMM for all rows
    for (int r = 0; r < rows; ++r) merge_into(acc.o.row(r).data(), acc.lse[r], tile_o.row(r).data(), ws.tile_lse[r], d);
  }
}

}  // namespace hydragen::cpu
