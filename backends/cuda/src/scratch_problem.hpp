#pragma once
// Device tensors of one problem, bound as a plan's inputs and outputs: what a plan is timed on where
// the caller's tensors are not at hand (the rates' calibration, tune=measure). Q, K and V hold random
// values of unit variance (fill_random), as the sweep's N(0, 1) inputs do, so that the tensor cores
// and DRAM switch as many bits, and draw the power, real data's would. No kernel branches on the values.
#include <cstddef>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/cuda/device_array.hpp"

namespace hydragen::cuda {

class ScratchProblem {
 public:
  ScratchProblem(const AttentionShape& shape, const SharingTree& tree);
  // What the constructor allocates.
  static std::size_t bytes(const AttentionShape& shape, const SharingTree& tree);

  const AttentionInputs& in() const { return in_; }
  const AttentionOutputs& out() const { return out_; }

 private:
  DeviceArray<unsigned char> q_, o_;  // [B, q_len, Hq, D] shape.dtype
  DeviceArray<unsigned char> lse_;    // [B, q_len, Hq] lse_dtype(shape.dtype)
  std::vector<DeviceArray<unsigned char>> k_, v_;  // per segment [length, Hkv, D] shape.dtype
  AttentionInputs in_;
  AttentionOutputs out_;
};

}  // namespace hydragen::cuda
