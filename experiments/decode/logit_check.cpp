#include "decode/logit_check.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hydragen::decode {

Tolerance logit_tolerance(DType dtype, const ModelConfig& model) {
  const double u = unit_roundoff(dtype), u_sum = unit_roundoff(DType::fp32);
  const double roundings = kRoundingsPerLayer * model.layers + 2.0;  // + the final norm and the logits
  const double products = kProductsPerLayer * model.layers + 1.0;    // + the LM head
  const double longest_sum = std::max(model.hidden, model.ffn);
  // The errors' rms against the values' rms (independent errors add in quadrature).
  const double relative = std::sqrt(roundings * u * u + products * longest_sum * u_sum * u_sum);
  const double worst_of_row = std::sqrt(2 * std::log(static_cast<double>(model.vocab)));
  Tolerance t;
  t.rtol = 2 * u;
  t.l2 = 2 * relative;
  t.atol = 2 * worst_of_row * relative;
  return t;
}

Comparison compare_logits(const std::vector<float>& logits, const Eigen::MatrixXd& ref, DType dtype, const ModelConfig& model) {
  if (ref.cols() != model.vocab) {
    throw std::invalid_argument("compare_logits: the reference has " + std::to_string(ref.cols()) + " columns, " + model.name +
                                " a vocabulary of " + std::to_string(model.vocab));
  }
  if (logits.size() != static_cast<std::size_t>(ref.size())) {
    throw std::invalid_argument("compare_logits: " + std::to_string(logits.size()) + " logits against " +
                                std::to_string(ref.size()) + " reference values");
  }
  std::vector<double> want(static_cast<std::size_t>(ref.size()));  // row-major, as the logits
  for (Eigen::Index r = 0; r < ref.rows(); ++r) {
    for (Eigen::Index c = 0; c < ref.cols(); ++c) want[static_cast<std::size_t>(r * ref.cols() + c)] = ref(r, c);
  }
  return compare_rows(std::vector<double>(logits.begin(), logits.end()), want, static_cast<std::size_t>(model.vocab),
                      logit_tolerance(dtype, model));
}

}  // namespace hydragen::decode
