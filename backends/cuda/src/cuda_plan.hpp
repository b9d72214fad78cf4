#pragma once
// What every CUDA plan shares: the problem, the device table of segment pointers and lengths, and
// binding a run's tensors to that table. plan() uploads and allocates everything; run() binds the
// input pointers and launches, nothing else, so it can be captured in a CUDA graph.
#include <cuda_runtime_api.h>

#include <memory>

#include <string>
#include <vector>

#include "hydragen/attention.hpp"
#include "hydragen/cuda/device_array.hpp"

namespace hydragen::cuda {

class CudaPlan : public AttentionPlan {
 public:
  // What this base allocates on the device: the leaf capacities, the segment lengths, and one
  // binding's segment tables.
  static std::size_t device_bytes(const SharingTree& tree) {
    return static_cast<std::size_t>(tree.num_segments()) * (2 * sizeof(const void*) + sizeof(int)) +
           static_cast<std::size_t>(tree.num_seqs()) * sizeof(int);
  }
  // A plan keeps the tables of at most this many distinct input sets (a model's layers, each with
  // its own KV cache, run one plan).
  static constexpr std::size_t kMaxBindings = 512;

 protected:
  // The device tables of one set of input pointers: uploaded on the first run with them, selected
  // on later runs, so that runs over several KV caches (one plan serving every layer of a decoder)
  // launch kernels only, and a CUDA graph captured over them replays with no copies.
  struct Binding {
    std::vector<const void*> pointers;  // q, o, lse, k[...], v[...] it was made for
    std::size_t hash = 0;
    DeviceArray<const void*> k, v;      // [num_segments] -> [length, Hkv, D]
    DeviceArray<unsigned char> extra;   // what the plan adds in rebound() (cuda-hydragen's TMA descriptors)
  };

  CudaPlan(const AttentionShape& shape, const SharingTree& tree);

  // check_io, then selects the binding of the inputs' pointers, making it on their first run (which
  // must not be captured in a CUDA graph: it uploads tables; std::logic_error says so). Returns the
  // stream.
  cudaStream_t bind(const AttentionInputs& in, const AttentionOutputs& out, Stream stream);

  // Called by bind when it makes a binding, after its segment tables are uploaded.
  virtual void rebound(const AttentionInputs&, Binding&, cudaStream_t) {}

  const Binding& binding() const { return *bindings_[current_]; }

  // The fields every kernel family's params share: Q, the segment tables and the run's leaf lengths.
  template <typename Params>
  void set_inputs(Params& p, const AttentionInputs& in) const {
    p.q = in.q.data;
    p.k = binding().k.data();
    p.v = binding().v.data();
    p.segment_length = segment_length_.data();
    p.leaf_lengths = in.leaf_lengths;
  }

  AttentionShape shape_;
  SharingTree tree_;
  DeviceArray<int> segment_length_;  // [num_segments]
  DeviceArray<int> leaf_capacity_;   // [B] the length of each sequence's leaf in tree_

 private:
  std::vector<std::unique_ptr<Binding>> bindings_;  // stable addresses: graphs hold their tables
  std::size_t current_ = 0;
};

}  // namespace hydragen::cuda
