#include "hydragen/cuda/memory.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "hydragen/cuda/check.hpp"
#include "hydragen/errors.hpp"
#include "plans.hpp"

namespace hydragen::cuda {

namespace {

// For OutOfMemory's message: what the device had when the allocation failed.
std::string memory_info() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const cudaError_t error = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaMemGetInfo failed: ") + cudaGetErrorString(error);
  }
  int device = 0;
  (void)cudaGetDevice(&device);  // cannot fail once cudaMemGetInfo worked
  return "device " + std::to_string(device) + " has " + std::to_string(free_bytes) + " of " +
         std::to_string(total_bytes) + " bytes free";
}

class CudaMemory final : public DeviceMemory {
 public:
  std::string_view name() const override { return "cuda"; }

  std::string unavailable_reason() const override {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return "no CUDA device: " + error_text(error) + " (cudaGetDeviceCount: " + cudaGetErrorName(error) + ")";
    }
    if (count == 0) return "no CUDA device: cudaGetDeviceCount found none";
    return {};
  }

  void* allocate(std::size_t bytes) const override {
    if (bytes == 0) return nullptr;
    void* ptr = nullptr;
    const cudaError_t error = cudaMalloc(&ptr, bytes);
    if (error == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so the context stays usable
      throw OutOfMemory("cuda memory", bytes, "cudaMalloc: " + memory_info());
    }
    if (error != cudaSuccess) detail::throw_cuda_error(error, "cudaMalloc(&ptr, bytes)", __FILE__, __LINE__);
    return ptr;
  }

  std::size_t available_bytes() const override {
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
  }

  void release(void* ptr) const noexcept override {
    // A destructor cannot report a failure (e.g. a sticky fault, or the runtime already unloaded at
    // exit); drop it so the next check does not blame an unrelated call.
    if (ptr != nullptr && cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
  }

  // cudaMemcpy from pageable memory, device-to-device, and cudaMemset may return before the device
  // has finished; wait, so that every call here is complete on return and the buffer can go to any
  // stream next (a non-blocking stream does not wait for the legacy stream).
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) const override {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) const override {
    if (bytes != 0) CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void copy(void* dst, const void* src, std::size_t bytes) const override {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void fill(void* dst, unsigned char byte, std::size_t bytes) const override {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemset(dst, byte, bytes));
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }

  void synchronize() const override { CUDA_CHECK(cudaDeviceSynchronize()); }

  // The CUDA planner's for the current GPU, as its plans get them (planning_device).
  SharingRates sharing_rates() const override { return sharing_rates_for(planning_device().rates); }
};

}  // namespace

const DeviceMemory& device_memory() {
  static const CudaMemory memory;
  return memory;
}

}  // namespace hydragen::cuda
