#pragma once
// The decoder step's arithmetic on the host: fp32 in host memory, each operation computed when it
// is called (Eigen GEMMs, OpenMP over rows). The decoder's runtime without a GPU, and what the CUDA
// runtime is tested against.
#include <memory>

#include "decode/runtime.hpp"

namespace hydragen::decode {

// Beyond the shared argument checks, it refuses values it can read: a token outside the embedding
// table, a leaf shorter than its step's tokens (std::invalid_argument naming the operation).
std::unique_ptr<Runtime> host_runtime();

}  // namespace hydragen::decode
