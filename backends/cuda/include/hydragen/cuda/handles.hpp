#pragma once
// Owners of CUDA handles: created in the constructor, destroyed in the destructor (which cannot
// report a failure, so it drops it), never copied.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "hydragen/cuda/check.hpp"

namespace hydragen::cuda {

class OwnedStream {
 public:
  OwnedStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~OwnedStream() { (void)cudaStreamDestroy(s_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class OwnedEvent {
 public:
  explicit OwnedEvent(unsigned flags = cudaEventDefault) { CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags)); }
  ~OwnedEvent() { (void)cudaEventDestroy(e_); }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class OwnedCublas {
 public:
  OwnedCublas() { CUBLAS_CHECK(cublasCreate(&h_)); }
  ~OwnedCublas() { (void)cublasDestroy(h_); }
  OwnedCublas(const OwnedCublas&) = delete;
  OwnedCublas& operator=(const OwnedCublas&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace hydragen::cuda
