#include "decode/rotary.hpp"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace hydragen::decode {

std::vector<float> rotary_table(double theta, int head_dim, int positions) {
  if (head_dim <= 0 || head_dim % 2 != 0) throw std::invalid_argument("rotary_table: head_dim " + std::to_string(head_dim) + " is not positive and even");
  if (positions < 1) throw std::invalid_argument("rotary_table: positions " + std::to_string(positions) + " < 1");
  if (!(theta > 0)) throw std::invalid_argument("rotary_table: theta " + std::to_string(theta) + " is not positive");
  const int half = head_dim / 2;
  std::vector<double> frequency(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) frequency[static_cast<std::size_t>(i)] = std::pow(theta, -2.0 * i / head_dim);
  std::vector<float> table(static_cast<std::size_t>(positions) * static_cast<std::size_t>(head_dim));
#pragma omp parallel for
  for (int position = 0; position < positions; ++position) {
    float* cosines = table.data() + static_cast<std::size_t>(position) * static_cast<std::size_t>(head_dim);  // [D / 2]
    float* sines = cosines + half;                                                                              // [D / 2]
    for (int i = 0; i < half; ++i) {
      const double angle = position * frequency[static_cast<std::size_t>(i)];
      cosines[i] = static_cast<float>(std::cos(angle));
      sines[i] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

}  // namespace hydragen::decode
