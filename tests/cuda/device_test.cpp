#include "hydragen/cuda/device.hpp"

#include <gtest/gtest.h>

#include <iostream>

#include "device_fixture.hpp"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/memory.hpp"

namespace hydragen::cuda {
namespace {

// Runs everywhere: CI has no GPU, the device machine has one; both must be reported consistently.
TEST(DeviceCount, AgreesWithAvailability) {
  const std::string reason = device_memory().unavailable_reason();
  if (reason.empty()) {
    EXPECT_GT(device_count(), 0);
  } else {
    EXPECT_EQ(device_count(), 0) << reason;
    EXPECT_TRUE(contains(reason, "no CUDA device")) << reason;
  }
  EXPECT_THROW(query_device(device_count()), CudaError);  // one past the last device
}

using QueryDevice = DeviceTest;

TEST_F(QueryDevice, ReturnsPlausibleValues) {
  const DeviceInfo info = query_device();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.major, 7);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.l2_bytes, 0u);
  EXPECT_GE(info.shared_memory_per_block_optin, 48u * 1024);
  EXPECT_GT(info.global_memory_bytes, 1ull << 30);
  EXPECT_GT(info.memory_bus_width_bits, 0);
  EXPECT_TRUE(contains(info.describe(), info.name));
  std::cout << info.describe() << "\n";
}

}  // namespace
}  // namespace hydragen::cuda
