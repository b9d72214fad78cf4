// The cp.async copies' L2 eviction priorities are constants (kernels/mma.cuh), so that ptxas keeps them
// in uniform registers; each must be the value the createpolicy instruction gives for its priority.
#include <gtest/gtest.h>

#include <vector>

#include "device_fixture.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "kernels/mma.cuh"

namespace hydragen::cuda {
namespace {

__global__ void create_policies(unsigned long long* out) {  // out: [2] normal, first
  asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(out[0]));
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(out[1]));
}

using L2Policy = DeviceTest;

TEST_F(L2Policy, ConstantsAreWhatCreatepolicyGives) {
  DeviceArray<unsigned long long> out(2);  // [2]
  create_policies<<<1, 1>>>(out.data());
  check_launch("create_policies");
  std::vector<unsigned long long> back(2);
  device_memory().copy_to_host(back.data(), out.data(), out.bytes());
  EXPECT_EQ(back[0], kL2EvictNormal) << std::hex << back[0];
  EXPECT_EQ(back[1], kL2EvictFirst) << std::hex << back[1];
}

}  // namespace
}  // namespace hydragen::cuda
