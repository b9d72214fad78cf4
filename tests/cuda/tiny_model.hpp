#pragma once
// The GPU decoder tests' model (decode_test.cpp, decode_tp_test.cpp) and their bf16 noise bound.
#include <gtest/gtest.h>

#include <Eigen/Core>

#include <cmath>
#include <string>
#include <vector>

#include "decode/model_config.hpp"

namespace hydragen::decode {

// The smoke preset's shape with D = 64, a head dim the CUDA kernels have (smoke's 16 they do not).
inline ModelConfig tiny_model() { return {"tiny-d64", 2, 256, 4, 2, 64, 512, 97, 1e4, 1e-5, 4096}; }

// bf16 through two layers: each activation is rounded (u = 2^-9) a few times per layer, so the
// logits carry errors of about 1% of their scale (the first steps' measured gaps stay under 3%). A
// token whose fp64 logit is within kNoise of the best is a choice bf16 cannot make reliably; a wrong
// attention misses by tens of percent.
inline constexpr double kNoise = 0.03;

// Whether b's tokens of sequence s are a's at every step (a, b: [steps, batch]). Where they first
// differ, a's and b's tokens must be a near tie in the fp64 logits of a's sequence (ref_rows: one row
// per step); `what` names b in the failure.
inline bool same_until_near_tie(const Eigen::MatrixXd& ref_rows, const std::vector<int>& a, const std::vector<int>& b, int s,
                                int batch, const std::string& what) {
  for (Eigen::Index j = 0; j < ref_rows.rows(); ++j) {
    const int x = a[static_cast<std::size_t>(j * batch + s)], y = b[static_cast<std::size_t>(j * batch + s)];
    if (x == y) continue;
    const Eigen::RowVectorXd row = ref_rows.row(j);
    EXPECT_LE(std::abs(row[x] - row[y]), kNoise * row.cwiseAbs().maxCoeff())
        << what << " leaves the tokens at sequence " << s << ", step " << j << " by more than a near tie";
    return false;
  }
  return true;
}

}  // namespace hydragen::decode
