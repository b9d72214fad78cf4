#pragma once
// TMA descriptors (CUtensorMap) of segment K/V tensors for the wgmma kernel, encoded on the host
// through the driver entry point (no link against libcuda).
#include <cuda.h>

#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

// A descriptor of `data` [length, kv_heads, head_dim] (fp16/bf16) whose boxes are kWgmmaBoxTokens tokens
// x 64 columns of one KV head (a wgmma tile is KT / 64 of them per 64 columns), landing in shared memory 128-byte swizzled (wgmma.cuh's layout);
// tokens past `length` arrive as zeros. Throws std::invalid_argument on what TMA cannot describe.
CUtensorMap kv_tensor_map(const void* data, DType dtype, int length, int kv_heads, int head_dim);

}  // namespace hydragen::cuda
