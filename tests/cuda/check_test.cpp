// CUDA_CHECK and CUBLAS_CHECK: the messages need no GPU (the calls fail with or without one).
#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "hydragen/cuda/check.hpp"

namespace hydragen::cuda {
namespace {

TEST(CudaCheck, ThrowsWithCallFileAndErrorString) {
  try {
    CUDA_CHECK(cudaSetDevice(9999));
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(e.error(), cudaSuccess);
    EXPECT_TRUE(contains(what, "cudaSetDevice(9999)")) << what;
    EXPECT_TRUE(contains(what, "check_test.cpp:")) << what;
    EXPECT_TRUE(contains(what, cudaGetErrorName(e.error()))) << what;
    EXPECT_TRUE(contains(what, error_text(e.error()))) << what;
  }
}

// The runtime's words for a machine without a GPU read as "upgrade your driver".
TEST(CudaCheck, NoDriverOrGpuSaysSo) {
  EXPECT_EQ(error_text(cudaErrorInsufficientDriver), "no NVIDIA driver or GPU found");
  EXPECT_EQ(error_text(cudaErrorNoDevice), "no NVIDIA driver or GPU found");
  EXPECT_EQ(error_text(cudaErrorInvalidDevice), cudaGetErrorString(cudaErrorInvalidDevice));
}

// Without a driver every call fails the same way, so only a device shows the error being reset.
using CudaCheckOnDevice = DeviceTest;

TEST_F(CudaCheckOnDevice, ResetsTheLastError) {
  try {
    CUDA_CHECK(cudaSetDevice(9999));
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.error(), cudaErrorInvalidDevice) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "CUDA_CHECK left the error for the next check";
}

TEST(CublasCheck, ThrowsWithStatusName) {
  try {
    CUBLAS_CHECK(cublasSetStream(nullptr, nullptr));  // no handle: NOT_INITIALIZED, device or not
    FAIL() << "CUBLAS_CHECK did not throw";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.cublas_status(), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_TRUE(contains(what, "CUBLAS_STATUS_NOT_INITIALIZED")) << what;
    EXPECT_TRUE(contains(what, "check_test.cpp:")) << what;
  }
}

}  // namespace
}  // namespace hydragen::cuda
