#include "cuda_plan.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "hydragen/cuda/check.hpp"

namespace hydragen::cuda {

namespace {

// Throws std::invalid_argument when `ptr` is not memory the GPU can address (a host pointer).
void require_device_pointer(const void* ptr, const std::string& name) {
  if (ptr == nullptr) return;  // only empty segments may be null, and check_io has allowed them
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    throw std::invalid_argument(name + ": not CUDA device memory (CUDA backends read and write GPU buffers)");
  }
}

std::vector<int> lengths(const SharingTree& tree) {
  std::vector<int> l;
  for (int i = 0; i < tree.num_segments(); ++i) l.push_back(tree.length(i));
  return l;
}

std::vector<int> leaf_capacities(const SharingTree& tree) {
  std::vector<int> l;
  for (int s = 0; s < tree.num_seqs(); ++s) l.push_back(tree.length(tree.leaf(s)));
  return l;
}

}  // namespace

CudaPlan::CudaPlan(const AttentionShape& shape, const SharingTree& tree)
    : shape_(shape), tree_(tree), segment_length_(upload(lengths(tree))), leaf_capacity_(upload(leaf_capacities(tree))) {}

cudaStream_t CudaPlan::bind(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) {
  check_io(shape_, tree_, in, out);
  std::vector<const void*> now{in.q.data, out.o.data, out.lse.data};
  for (const auto* side : {&in.k, &in.v}) {
    for (const ConstTensor& t : *side) now.push_back(t.data);
  }
  std::size_t hash = now.size();
  for (const void* p : now) hash = hash * 1099511628211ULL ^ reinterpret_cast<std::uintptr_t>(p);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  if (!bindings_.empty() && binding().hash == hash && binding().pointers == now) return s;
  for (std::size_t i = 0; i < bindings_.size(); ++i) {
    if (bindings_[i]->hash == hash && bindings_[i]->pointers == now) {
      current_ = i;
      return s;
    }
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) {
    throw std::logic_error("a plan's first run with these tensors is being captured in a CUDA graph: it uploads their "
                           "tables, so run it once before capturing");
  }
  if (bindings_.size() == kMaxBindings) {
    throw std::length_error("this plan has run with " + std::to_string(kMaxBindings) +
                            " different sets of tensors, the most it keeps tables for: make a new plan");
  }
  const int n = tree_.num_segments();
  require_device_pointer(in.q.data, "inputs.q");
  require_device_pointer(out.o.data, "outputs.o");
  require_device_pointer(out.lse.data, "outputs.lse");
  for (int i = 0; i < n; ++i) {
    require_device_pointer(in.k[i].data, "inputs.k[" + std::to_string(i) + "]");
    require_device_pointer(in.v[i].data, "inputs.v[" + std::to_string(i) + "]");
  }
  auto b = std::make_unique<Binding>();
  b->k = DeviceArray<const void*>(static_cast<std::size_t>(n));
  b->v = DeviceArray<const void*>(static_cast<std::size_t>(n));
  // From pageable memory: the call returns once the source is staged, so `now` may go.
  CUDA_CHECK(cudaMemcpyAsync(b->k.data(), now.data() + 3, b->k.bytes(), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(b->v.data(), now.data() + 3 + n, b->v.bytes(), cudaMemcpyHostToDevice, s));
  rebound(in, *b, s);
  b->pointers = std::move(now);
  b->hash = hash;
  bindings_.push_back(std::move(b));
  current_ = bindings_.size() - 1;
  return s;
}

}  // namespace hydragen::cuda
