#pragma once
// A small, bounds-checked reader and writer of NumPy .npy files (format versions 1.0, 2.0, 3.0), for
// hydragen-diff's --npy-dir mode. No third-party library.
//
// Supported element types (little-endian, C order only):
//   '<f2' fp16, '<f4' fp32, '<f8' fp64 (NumPy float16/float32/float64);
//   '<u2' bf16 as its raw 16 bits (arr.view(np.uint16) of an ml_dtypes.bfloat16 array); '<V2' / '|V2'
//   is read as bf16 too, because that is what np.save writes for an ml_dtypes.bfloat16 array
//   (jax-ml/ml_dtypes issue #41), and so is 'bfloat16' (str(dtype), as some hand-written headers use).
// The writer writes version 1.0 (2.0 when the header needs it) and bf16 as '<u2'.
// Anything else (big-endian '>f4', fortran_order True, another descr, a malformed header, a shape
// whose size overflows, a file shorter or longer than header + data) throws std::invalid_argument
// with a one-line message. The parser never reads outside [data, data + size).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hydragen/dtype.hpp"

namespace hydragen::diff {

struct NpyArray {
  DType dtype = DType::fp64;
  std::vector<std::size_t> shape;  // () for a scalar
  std::vector<std::byte> data;     // count() * dtype_size(dtype) bytes, little-endian, C order

  std::size_t count() const;            // product of shape (1 for a scalar)
  std::vector<double> values() const;   // decoded exactly to fp64
  std::string shape_text() const;       // "(2, 3, 4)"
};

// Parses a whole .npy file held in memory. Throws std::invalid_argument (message without a file name).
NpyArray parse_npy(const std::byte* bytes, std::size_t size);
NpyArray parse_npy(const std::vector<std::byte>& bytes);

// Reads and parses a file; messages start with the path. Throws std::invalid_argument when it cannot
// be opened or read, or does not parse.
NpyArray read_npy(const std::string& path);

// The bytes of a .npy file holding `values` (row-major for `shape`) encoded as `dtype` (rounded to
// nearest even). Throws std::invalid_argument if values.size() is not the product of shape.
std::vector<std::byte> format_npy(DType dtype, const std::vector<std::size_t>& shape, const std::vector<double>& values);
// Writes format_npy(...) to path; throws std::runtime_error when the file cannot be written.
void write_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
               const std::vector<double>& values);

}  // namespace hydragen::diff
