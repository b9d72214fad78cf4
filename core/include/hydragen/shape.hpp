#pragma once
// The dimensions of one attention problem (DESIGN.md section 2).
#include <string>

#include "hydragen/dtype.hpp"

namespace hydragen {

struct AttentionShape {
  int num_seqs = 1;   // B
  int q_len = 1;      // queries per sequence (1 when decoding)
  int q_heads = 1;    // Hq
  int kv_heads = 1;   // Hkv; Hq % Hkv == 0, g = Hq / Hkv
  int head_dim = 128; // D
  float scale = 0;    // score scale; use default_scale(D) for 1/sqrt(D)
  DType dtype = DType::fp32;  // element type of Q, K, V and O

  int group_size() const { return q_heads / kv_heads; }  // g
  // Throws std::invalid_argument naming the first offending field and its value.
  void validate() const;
  std::string describe() const;  // "B=4 q_len=1 Hq=8 Hkv=1 D=128 fp32 scale=0.0884"

  static float default_scale(int head_dim);
};

// Convenience: a shape whose scale is 1/sqrt(D).
AttentionShape make_shape(int num_seqs, int q_len, int q_heads, int kv_heads, int head_dim, DType dtype);

}  // namespace hydragen
