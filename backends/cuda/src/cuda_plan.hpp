#pragma once
// What every CUDA plan shares: the problem, the device table of segment pointers and lengths, and
// binding a run's tensors to that table. plan() uploads and allocates everything; run() binds the
// input pointers and launches, nothing else, so it can be captured in a CUDA graph.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/cuda/device_array.hpp"

namespace hydragen::cuda {

class CudaPlan : public AttentionPlan {
 public:
  // What this base allocates on the device: the segment tables.
  static std::size_t device_bytes(const SharingTree& tree) {
    return static_cast<std::size_t>(tree.num_segments()) * (2 * sizeof(const void*) + sizeof(int));
  }

 protected:
  CudaPlan(const AttentionShape& shape, const SharingTree& tree);

  // check_io, then points the device tables at the inputs. The pointers are checked and copied only
  // when they differ from the last run's, so repeated runs (and a graph captured after a first run)
  // launch kernels only.
  cudaStream_t bind(const AttentionInputs& in, const AttentionOutputs& out, Stream stream);

  // Called by bind when the input pointers changed, after the segment tables are uploaded.
  virtual void rebound(const AttentionInputs&, cudaStream_t) {}

  // The fields every kernel family's params share: Q and the segment tables.
  template <typename Params>
  void set_inputs(Params& p, const AttentionInputs& in) const {
    p.q = in.q.data;
    p.k = k_.data();
    p.v = v_.data();
    p.segment_length = segment_length_.data();
  }

  AttentionShape shape_;
  SharingTree tree_;
  DeviceArray<const void*> k_;       // [num_segments] -> [length, Hkv, D]
  DeviceArray<const void*> v_;       // [num_segments] -> [length, Hkv, D]
  DeviceArray<int> segment_length_;  // [num_segments]

 private:
  std::vector<const void*> bound_;  // q, o, lse, k[...], v[...] as last bound
};

}  // namespace hydragen::cuda
