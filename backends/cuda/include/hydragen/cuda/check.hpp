#pragma once
// CUDA and cuBLAS failures become exceptions that name the status, the call and file:line.
// Allocations go through device_memory(), which reports running out as hydragen::OutOfMemory.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace hydragen::cuda {

class CudaError : public std::runtime_error {
 public:
  // what(): "<where>: <status name> (<status string>)" (error_text for a CUDA error).
  CudaError(cudaError_t error, const std::string& where);
  CudaError(cublasStatus_t status, const std::string& where);

  cudaError_t error() const { return error_; }                   // cudaSuccess for a cuBLAS failure
  cublasStatus_t cublas_status() const { return cublas_status_; }  // SUCCESS for a CUDA failure

 private:
  cudaError_t error_ = cudaSuccess;
  cublasStatus_t cublas_status_ = CUBLAS_STATUS_SUCCESS;
};

// What a CUDA error means to the user: its string, except for the two with which the runtime says
// there is no usable GPU ("driver version is insufficient" reads as "upgrade your driver").
std::string error_text(cudaError_t error);

// Throws CudaError if the last kernel launch failed (bad configuration, no kernel image for this
// device, or an earlier asynchronous fault). `what` names the kernel.
void check_launch(const char* what);

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line);
}  // namespace detail

}  // namespace hydragen::cuda

#define CUDA_CHECK(expr)                                                                  \
  do {                                                                                    \
    const cudaError_t hydragen_cuda_error_ = (expr);                                      \
    if (hydragen_cuda_error_ != cudaSuccess)                                              \
      ::hydragen::cuda::detail::throw_cuda_error(hydragen_cuda_error_, #expr, __FILE__, __LINE__); \
  } while (false)

#define CUBLAS_CHECK(expr)                                                                      \
  do {                                                                                          \
    const cublasStatus_t hydragen_cublas_status_ = (expr);                                      \
    if (hydragen_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::hydragen::cuda::detail::throw_cublas_error(hydragen_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (false)
