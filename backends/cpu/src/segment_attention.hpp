#pragma once
// The inner loop both CPU backends share: a block of query rows attends a run of one KV head's
// tokens, tile by tile, each tile's partial folded into a running (O, LSE) by the core merge.
#include <Eigen/Dense>
#include <vector>

#include "hydragen/dtype.hpp"

namespace hydragen::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One KV head's keys or values inside a segment tensor.
struct KvSlice {
  const void* data = nullptr;  // [len, Hkv, D] in `dtype`; null when len == 0
  DType dtype = DType::fp32;
  int kv_heads = 1;
  int head_dim = 0;
  int kv_head = 0;
};

// Tokens per tile: a 256 x D fp32 K or V tile is 128 KB at D=128, so a tile pair stays in L2.
inline constexpr int kTileTokens = 256;

// Per-thread scratch, sized once at plan time so the tile loop does not allocate.
struct Workspace {
  RowMatrix k, v;     // [kTileTokens, D] tiles widened from 16-bit storage
  RowMatrix scores;   // [rows, kTileTokens]
  RowMatrix tile_o;   // [rows, D]
  Eigen::VectorXf tile_lse;  // [rows]
  void reserve(int rows, int head_dim);
};

// Running partial for `rows` query rows: normalized O [rows, D] and LSE [rows]; starts empty.
struct Partial {
  RowMatrix o;
  Eigen::VectorXf lse;
  void reset(int rows, int head_dim);
};

// q [rows, D] (fp32) attends tokens [begin, end) of the slice; row r sees token j only if j < limit[r].
// The result is merged into acc.
void attend_tokens(const RowMatrix& q, const KvSlice& k, const KvSlice& v, long long begin, long long end,
                   const std::vector<long long>& limit, float scale, Partial& acc, Workspace& ws);

}  // namespace hydragen::cpu
