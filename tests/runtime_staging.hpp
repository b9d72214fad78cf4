#pragma once
// What the runtime tests (host, and CUDA against host) stage: bf16-representable values and
// matrices of them in a runtime's memory.
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "decode/runtime.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::decode {

// Uniform in [-scale, scale], rounded to bf16 (the values every runtime can hold exactly).
inline std::vector<float> random_values(std::size_t count, std::uint64_t seed, float scale = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> values(count);
  for (float& v : values) v = bf16_bits_to_float(float_to_bf16_bits(uniform(rng)));
  return values;
}

// A matrix of rows x cols values, rows `ld` apart (values holds rows * ld), in a runtime's memory.
struct Staged {
  Buffer buffer;
  Matrix m;
};
inline Staged stage(const Runtime& rt, const std::vector<float>& values, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  Buffer buffer = rt.upload(values);
  const Matrix m{buffer.data(), rt.dtype(), rows, cols, ld};
  return {std::move(buffer), m};
}
// ld from the values' count.
inline Staged stage(const Runtime& rt, const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
  return stage(rt, values, rows, cols, static_cast<std::int64_t>(values.size()) / rows);
}

}  // namespace hydragen::decode
