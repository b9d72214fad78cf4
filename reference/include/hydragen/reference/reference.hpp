#pragma once
// The fp64 definition of attention, and the proof that the decomposition is exact.
//
//   reference             softmax(q K^T * scale) V per sequence over its concatenated path
//   reference-decomposed  the same per segment, then the LSE merge (hydragen/merge.hpp) along the path
//
// Both take fp64 tensors in host memory (Eigen + OpenMP over sequence x KV head).
#include "hydragen/registry.hpp"

namespace hydragen {

void register_reference_backends(BackendRegistry& registry);

}  // namespace hydragen
