#include "cuda_plan.hpp"

#include <stdexcept>

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

}  // namespace

CudaPlan::CudaPlan(const AttentionShape& shape, const SharingTree& tree)
    : shape_(shape),
      tree_(tree),
      k_(static_cast<std::size_t>(tree.num_segments())),
      v_(static_cast<std::size_t>(tree.num_segments())),
      segment_length_(upload(lengths(tree))) {}

cudaStream_t CudaPlan::bind(const AttentionInputs& in, const AttentionOutputs& out, Stream stream) {
  check_io(shape_, tree_, in, out);
  std::vector<const void*> now{in.q.data, out.o.data, out.lse.data};
  for (const auto* side : {&in.k, &in.v}) {
    for (const ConstTensor& t : *side) now.push_back(t.data);
  }
  const auto s = static_cast<cudaStream_t>(stream.handle);
  if (now == bound_) return s;
  const int n = tree_.num_segments();
  require_device_pointer(in.q.data, "inputs.q");
  require_device_pointer(out.o.data, "outputs.o");
  require_device_pointer(out.lse.data, "outputs.lse");
  for (int i = 0; i < n; ++i) {
    require_device_pointer(in.k[i].data, "inputs.k[" + std::to_string(i) + "]");
    require_device_pointer(in.v[i].data, "inputs.v[" + std::to_string(i) + "]");
  }
  // From pageable memory: the call returns once the source is staged, so `now` may go.
  CUDA_CHECK(cudaMemcpyAsync(k_.data(), now.data() + 3, k_.bytes(), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(v_.data(), now.data() + 3 + n, v_.bytes(), cudaMemcpyHostToDevice, s));
  rebound(in, s);
  bound_ = std::move(now);
  return s;
}

}  // namespace hydragen::cuda
