#pragma once
// Non-owning views of the tensors a backend reads and writes. Shapes are implied by the
// AttentionShape and SharingTree (DESIGN.md section 2); a view carries its element count so that a
// buffer that is too small is caught before any kernel runs.
#include <cstddef>

#include "hydragen/dtype.hpp"

namespace hydragen {

struct ConstTensor {
  const void* data = nullptr;
  DType dtype = DType::fp32;
  std::size_t numel = 0;  // elements the buffer holds (at least what the shape needs)
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::fp32;
  std::size_t numel = 0;
};

}  // namespace hydragen
