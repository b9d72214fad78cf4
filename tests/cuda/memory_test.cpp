#include "hydragen/cuda/memory.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "device_fixture.hpp"
#include "device_rates.hpp"
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "hydragen/errors.hpp"

namespace hydragen::cuda {
namespace {

using CudaMemory = DeviceTest;

std::vector<float> pattern(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5f + static_cast<float>(i);
  return v;
}

TEST_F(CudaMemory, RoundTrip) {
  const std::vector<float> host = pattern(1000);
  DeviceArray<float> device(host.size());  // [1000]
  device_memory().copy_from_host(device.data(), host.data(), device.bytes());
  std::vector<float> back(host.size());
  device_memory().copy_to_host(back.data(), device.data(), device.bytes());
  EXPECT_EQ(back, host);
}

// Detection on a GPU the table names weighs the partials at its row's rate, the source its plans name.
TEST_F(CudaMemory, SharingRatesAreThePlannersForThisGpu) {
  const std::optional<DeviceRates> table = device_rates(query_device().name);
  if (!table || rates_source(std::getenv("HYDRAGEN_RATES")) != RatesSource::table_first) {
    GTEST_SKIP() << "no row in device-rates.csv for this GPU, or HYDRAGEN_RATES asks for other rates";
  }
  const SharingRates r = device_memory().sharing_rates();
  EXPECT_EQ(r.partials_share, table->partials_share);
  EXPECT_EQ(r.source, table->source);
}

TEST_F(CudaMemory, Fill) {
  DeviceArray<std::uint8_t> device(4097);  // [4097], odd so the tail is covered
  device_memory().fill(device.data(), 0xFF, device.bytes());
  std::vector<std::uint8_t> back(device.size());
  device_memory().copy_to_host(back.data(), device.data(), device.bytes());
  EXPECT_EQ(back, std::vector<std::uint8_t>(device.size(), 0xFF));
}

TEST_F(CudaMemory, DeviceToDeviceCopy) {
  const std::vector<float> host = pattern(777);
  DeviceArray<float> src(host.size());  // [777]
  DeviceArray<float> dst(host.size());  // [777]
  device_memory().copy_from_host(src.data(), host.data(), src.bytes());
  device_memory().fill(dst.data(), 0, dst.bytes());
  device_memory().copy(dst.data(), src.data(), src.bytes());
  std::vector<float> back(host.size());
  device_memory().copy_to_host(back.data(), dst.data(), dst.bytes());
  EXPECT_EQ(back, host);
}

TEST_F(CudaMemory, ZeroBytesIsNull) {
  EXPECT_EQ(device_memory().allocate(0), nullptr);
  EXPECT_EQ(DeviceArray<float>(0).data(), nullptr);
}

TEST_F(CudaMemory, AbsurdAllocationThrowsOutOfMemoryAndLeavesContextUsable) {
  const std::size_t pebibyte = std::size_t{1} << 50;
  try {
    DeviceArray<std::uint8_t> huge(pebibyte);
    FAIL() << "allocating 1 PiB did not throw";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested_bytes(), pebibyte);
    EXPECT_TRUE(contains(e.what(), std::to_string(pebibyte))) << e.what();
    EXPECT_TRUE(contains(e.what(), "bytes free")) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<float> host = pattern(64);
  DeviceArray<float> small(host.size());  // [64]
  device_memory().copy_from_host(small.data(), host.data(), small.bytes());
  std::vector<float> back(host.size());
  device_memory().copy_to_host(back.data(), small.data(), small.bytes());
  EXPECT_EQ(back, host);
}

TEST_F(CudaMemory, DeviceArrayMovesOwnership) {
  DeviceArray<double> a(16);  // [16]
  const double* ptr = a.data();
  DeviceArray<double> b(std::move(a));
  EXPECT_EQ(b.data(), ptr);
  EXPECT_EQ(b.size(), 16u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from must be empty
  EXPECT_EQ(a.size(), 0u);
}

TEST(DeviceArray, OverflowingSizeThrowsBeforeAllocating) {
  EXPECT_THROW(DeviceArray<double>(std::numeric_limits<std::size_t>::max() / 4), std::length_error);
}

}  // namespace
}  // namespace hydragen::cuda
