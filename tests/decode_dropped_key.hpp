#pragma once
// The decoder tests' proof that their logits check sees one token (issue 42; test_decoder on the host,
// cuda/decode_test on the GPU): one sequence's logits after a step pass compare_logits against the fp64
// forward pass of its tokens, and fail it against the same pass with any one key left out of the last
// token's attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "decode/forward64.hpp"
#include "decode/logit_check.hpp"

namespace hydragen::decode {

// logits [V]: the decoder's for the last of `tokens`. Returns the smallest bound ratio among the dropped keys.
inline double expect_check_sees_each_dropped_key(const std::vector<float>& logits, const Forward64& reference,
                                                 const std::vector<int>& tokens, DType dtype, const ModelConfig& model) {
  const Comparison whole = compare_logits(logits, reference.logits(tokens).bottomRows(1), dtype, model);
  EXPECT_TRUE(whole.pass) << "against every key: " << whole.o_bound_ratio << " of the bound";
  double least = std::numeric_limits<double>::infinity();
  for (int key = 0; key + 1 < static_cast<int>(tokens.size()); ++key) {
    const Comparison dropped = compare_logits(logits, reference.logits(tokens, 0, key).bottomRows(1), dtype, model);
    EXPECT_FALSE(dropped.pass) << "key " << key << " of " << tokens.size() << " left out passes: " << dropped.o_bound_ratio
                               << " of the bound";
    least = std::min(least, dropped.o_bound_ratio);
  }
  std::printf("[ one key ] %zu keys: the check passes them all at %.2f of its bound; without any one of them it fails "
              "at %.1f times its bound or more\n",
              tokens.size(), whole.o_bound_ratio, least);
  return least;
}

}  // namespace hydragen::decode
