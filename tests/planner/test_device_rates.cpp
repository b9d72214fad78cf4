// The planner's device rates: one labelled table, another file of its columns (a calibration's), and
// no rates, ever, for a device neither names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_rates.hpp"
#include "planner.hpp"
#include "rules.hpp"

namespace hydragen::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const char* const kH100 = "NVIDIA H100 80GB HBM3";

TEST(DeviceRates, TheTableLabelsTheH100sRatesWithWhereTheyWereMeasured) {
  const std::optional<DeviceRates> r = device_rates(kH100);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->wgmma_sm_flops_per_ns, 4700);
  EXPECT_EQ(r->leaf_dram_bytes_per_ns, 2600);
  EXPECT_THAT(r->source, HasSubstr("device-rates.csv: NVIDIA H100 80GB HBM3 (measured: perf-notes v19"));
}

TEST(DeviceRates, ADeviceTheTableDoesNotNameHasNone) {
  EXPECT_FALSE(device_rates("NVIDIA H200").has_value());
  EXPECT_FALSE(device_rates("Imaginary GPU").has_value());
}

TEST(DeviceRates, ACalibrationFileRoundTripsThroughTheTablesColumns) {
  DeviceRates r{1000, 40, 4000, 0.9, 5000, 7000, 11000, ""};
  const std::string csv = device_rates_csv("Imaginary GPU", r, "hydragen-bench --calibrate 2026-11-26");
  const std::optional<DeviceRates> back = device_rates_in(csv, "Imaginary GPU", "rates.csv");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->leaf_sm_bytes_per_ns, 40);
  EXPECT_EQ(back->beside_leaf_dram_share, 0.9);
  EXPECT_EQ(back->fixed_ns, 11000);
  EXPECT_EQ(back->source, "rates.csv: Imaginary GPU (measured: hydragen-bench --calibrate 2026-11-26)");
  EXPECT_FALSE(device_rates_in(csv, kH100, "rates.csv").has_value());
}

TEST(DeviceRates, AMalformedFileIsNamedWithWhatIsWrong) {
  EXPECT_THAT([] { device_rates_in("device,rate\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rates.csv: the header is not")));
  const std::string header = "device,rate,value,unit,what,measured\n";
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,fast,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'fast' is not a number")));
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,6000,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("x has no wgmma_sm_flops")));
}

TEST(DeviceRates, TheDeviceRuleUsesTheRatesADeviceCarriesElseTheTablesElseNone) {
  DeviceLimits h100{132, true, true, kH100};
  EXPECT_THAT(device_and_rates(h100).decision.reason, HasSubstr("device-rates.csv: NVIDIA H100"));
  DeviceLimits calibrated{100, true, true, "Imaginary GPU", DeviceRates{1000, 40, 4000, 0.9, 5000, 7000, 11000, "measured here"}};
  const Ruled<std::optional<DeviceRates>> carried = device_and_rates(calibrated);
  ASSERT_TRUE(carried.choice.has_value());
  EXPECT_THAT(carried.decision.reason, HasSubstr("measured here"));
  const Ruled<std::optional<DeviceRates>> none = device_and_rates(DeviceLimits{100, true, true, "Imaginary GPU"});
  EXPECT_FALSE(none.choice.has_value());
  EXPECT_THAT(none.decision.reason, HasSubstr("rates: none"));
}

TEST(DeviceLimits, APlanForADeviceWithoutSmsIsRefused) {
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  EXPECT_THAT([&] { plan_hydragen_cublas(shape, SharingTree::prefix_suffix(64, {8, 8}), DeviceLimits{0, true, true, kH100}); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("0 SMs")));
}

}  // namespace
}  // namespace hydragen::cuda
