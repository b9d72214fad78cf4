#include "hydragen/cuda/check.hpp"

namespace hydragen::cuda {

namespace {
std::string at(const char* expr, const char* file, int line) {
  return std::string(expr) + " at " + file + ":" + std::to_string(line);
}
}  // namespace

std::string error_text(cudaError_t error) {
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) return "no NVIDIA driver or GPU found";
  return cudaGetErrorString(error);
}

CudaError::CudaError(cudaError_t error, const std::string& where)
    : std::runtime_error(where + ": " + cudaGetErrorName(error) + " (" + error_text(error) + ")"),
      error_(error) {}

CudaError::CudaError(cublasStatus_t status, const std::string& where)
    : std::runtime_error(where + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")"),
      cublas_status_(status) {}

void check_launch(const char* what) {
  const cudaError_t error = cudaGetLastError();  // also resets a non-sticky error
  if (error != cudaSuccess) throw CudaError(error, std::string("launching ") + what);
}

namespace detail {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* expr, const char* file, int line) {
  // A failed call also sets the runtime's last error; reset it (when not sticky) so the next
  // check_launch does not blame a kernel for this call.
  (void)cudaGetLastError();
  throw CudaError(error, at(expr, file, line));
}

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  throw CudaError(status, at(expr, file, line));
}

}  // namespace detail

}  // namespace hydragen::cuda
