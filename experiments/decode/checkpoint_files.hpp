#pragma once
// What reading and writing a Hugging Face checkpoint share (checkpoint.cpp, checkpoint_write.cpp):
// its file names and how a tensor is stored in safetensors.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "decode/weights.hpp"

namespace hydragen::decode {

inline const std::string kSingleFile = "model.safetensors";
inline const std::string kIndexFile = "model.safetensors.index.json";
inline const std::string kConfigFile = "config.json";

// As stored: [rows] for a vector, [rows, cols] for a matrix.
inline std::vector<std::int64_t> stored_shape(const TensorSpec& spec) {
  return spec.is_vector() ? std::vector<std::int64_t>{spec.rows} : std::vector<std::int64_t>{spec.rows, spec.cols};
}

// The dtype names of safetensors headers for the two we read and write.
inline const char* safetensors_dtype(DType dtype) { return dtype == DType::bf16 ? "BF16" : "F16"; }

inline std::int64_t elements(const TensorSpec& spec) { return spec.rows * std::max<std::int64_t>(1, spec.cols); }

}  // namespace hydragen::decode
