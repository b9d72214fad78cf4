#pragma once
// How a decoder's logits are judged against the fp64 forward pass (forward64.hpp; issue 42): the
// attention harness's rule (compare.hpp's compare_rows), a row being one sequence's logits at one
// step, with a bound derived from the runtime's dtype and the model rather than a share of the scale.
//
// Each stored activation of a step is rounded to the dtype (unit roundoff u): per layer the normed
// input, Q/K/V, the rotated queries, the attention output, the residual after the output projection,
// the normed input again, gate/up, the SwiGLU product and the residual after the down projection
// (kRoundingsPerLayer), then the final norm and the logits. Each rounding moves the final hidden state
// by u relative, in a direction of its own, and the LM head carries that to every logit as an error of
// about u times the row's rms. The products (Q/K/V, O, gate/up, down per layer: kProductsPerLayer; the
// LM head) sum in fp32 (unit roundoff u32), sums of up to K = max(H, F) terms adding about u32 sqrt(K)
// each: nothing beside bf16's roundings, most of the error in fp32. Independent errors add in
// quadrature, to e = sqrt(n u^2 + m K u32^2) of the row's rms, and the largest of a row's V errors is
// sqrt(2 ln V) of those. Twice that (the harness's margin) is atol, twice e the relative L2 bound;
// rtol is 2u, the harness's for a value rounded to the dtype.
#include <Eigen/Core>

#include <vector>

#include "decode/model_config.hpp"
#include "hydragen/compare.hpp"

namespace hydragen::decode {

inline constexpr int kRoundingsPerLayer = 9;
inline constexpr int kProductsPerLayer = 4;

// The bound above for `model`'s logits in `dtype`.
Tolerance logit_tolerance(DType dtype, const ModelConfig& model);

// logits [rows, V] (a decoder's, fp32 on the host) against ref [rows, V] (the fp64 forward pass's)
// under logit_tolerance; worst_index is the flat index row * V + token. Throws std::invalid_argument
// when the sizes differ or V is not the model's.
Comparison compare_logits(const std::vector<float>& logits, const Eigen::MatrixXd& ref, DType dtype, const ModelConfig& model);

}  // namespace hydragen::decode
