// check_launch: needs real kernels, hence the one .cu file here (it also makes this binary carry
// device code for every configured architecture, which cuobjdump can check).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "device_fixture.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device_array.hpp"

namespace hydragen::cuda {
namespace {

__global__ void iota_kernel(int* out, int n) {  // out: [n]
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = i;
}

using CheckLaunch = DeviceTest;

TEST_F(CheckLaunch, PassesAfterAGoodLaunch) {
  const int n = 1000;
  DeviceArray<int> out(n);  // [n]
  iota_kernel<<<(n + 255) / 256, 256>>>(out.data(), n);
  check_launch("iota_kernel");
  std::vector<int> back(n);
  device_memory().copy_to_host(back.data(), out.data(), out.bytes());
  std::vector<int> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(back, expected);
}

TEST_F(CheckLaunch, ThrowsOnABadConfiguration) {
  // Over the 1024 threads per block limit. CUDA 13 on an H100 reports cudaErrorInvalidValue, not
  // cudaErrorInvalidConfiguration, so only the failure and the message are checked.
  iota_kernel<<<1, 4096>>>(nullptr, 0);
  try {
    check_launch("iota_kernel");
    FAIL() << "check_launch did not throw";
  } catch (const CudaError& e) {
    EXPECT_NE(e.error(), cudaSuccess);
    EXPECT_TRUE(contains(e.what(), "iota_kernel")) << e.what();
    EXPECT_TRUE(contains(e.what(), cudaGetErrorString(e.error()))) << e.what();
  }
  check_launch("nothing");  // the error was reset: the context is still usable
}

}  // namespace
}  // namespace hydragen::cuda
