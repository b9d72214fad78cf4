// The planner's device rates: one labelled table, another file of its columns (a calibration's), and
// no rates, ever, for a device neither names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

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
  EXPECT_EQ(r->beside_margin, 0.97);
  EXPECT_EQ(r->partials_share, 0.5);
  EXPECT_THAT(r->source, HasSubstr("device-rates.csv: NVIDIA H100 80GB HBM3 (measured: perf-notes v19"));
}

// The H200's row: the leaf rates and the margin fitted to its own launches, the rest the H100's.
TEST(DeviceRates, TheH200sRowSaysWhichRatesWereFittedThereAndWhichAreTheH100s) {
  const std::optional<DeviceRates> r = device_rates("NVIDIA H200");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->leaf_dram_bytes_per_ns, 3800);
  EXPECT_EQ(r->beside_leaf_dram_share, 0.85);
  EXPECT_EQ(r->beside_margin, 1);
  EXPECT_EQ(r->wgmma_sm_flops_per_ns, device_rates(kH100)->wgmma_sm_flops_per_ns);
  EXPECT_THAT(r->source, HasSubstr("fitted to 154 points of both layouts (perf-notes v45)"));
  EXPECT_THAT(r->source, HasSubstr("the H100's (perf-notes v19): the same SMs and clock"));
}

TEST(DeviceRates, DetectionWeighsPartialsAtTheDevicesRateElseTheRateFreeOne) {
  const SharingRates h100 = sharing_rates_for(device_rates(kH100));
  EXPECT_EQ(h100.partials_share, 0.5);
  EXPECT_THAT(h100.source, HasSubstr("device-rates.csv: NVIDIA H100 80GB HBM3"));
  const SharingRates none = sharing_rates_for(device_rates("Imaginary GPU"));
  EXPECT_EQ(none.partials_share, kRateFreePartialsShare);
  EXPECT_EQ(none.source, SharingRates{}.source);
}

TEST(DeviceRates, ADeviceTheTableDoesNotNameHasNone) {
  EXPECT_FALSE(device_rates("NVIDIA H20").has_value());
  EXPECT_FALSE(device_rates("Imaginary GPU").has_value());
}

// A calibration measures seven rates; the margin and the partials' share it takes rate-free (1), and
// its file says so row by row.
DeviceRates calibrated() {
  DeviceRates r = unmeasured_rates();
  r.wgmma_sm_flops_per_ns = 1000;
  r.leaf_sm_bytes_per_ns = 40;
  r.leaf_dram_bytes_per_ns = 4000;
  r.beside_leaf_dram_share = 0.9;
  r.merge_ns = 5000;
  r.part_switch_ns = 7000;
  r.fixed_ns = 11000;
  return r;
}

TEST(DeviceRates, ACalibrationFileRoundTripsThroughTheTablesColumns) {
  EXPECT_EQ(unmeasured_rates().beside_margin, 1);
  EXPECT_EQ(unmeasured_rates().partials_share, kRateFreePartialsShare);
  EXPECT_EQ(unmeasured_rates().source, "not measured: beside_margin 1, partials_share 1 (rate-free)");
  const std::string csv = device_rates_csv("Imaginary GPU", calibrated(), "hydragen-bench --calibrate 2026-11-26");
  EXPECT_THAT(csv, HasSubstr("Imaginary GPU,merge,5000,ns,the merge kernel after a launch that filled the GPU,"
                             "hydragen-bench --calibrate 2026-11-26\n"));
  EXPECT_THAT(csv, HasSubstr(",beside_margin,1,ratio,"));
  EXPECT_THAT(csv, HasSubstr(",not measured: no margin (the model's prediction alone)\n"));
  EXPECT_THAT(csv, HasSubstr(",partials_share,1,share,"));
  const std::optional<DeviceRates> back = device_rates_in(csv, "Imaginary GPU", "rates.csv");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->leaf_sm_bytes_per_ns, 40);
  EXPECT_EQ(back->beside_leaf_dram_share, 0.9);
  EXPECT_EQ(back->fixed_ns, 11000);
  EXPECT_EQ(back->beside_margin, 1);
  EXPECT_EQ(back->partials_share, 1);
  EXPECT_THAT(back->source, HasSubstr("rates.csv: Imaginary GPU (measured: hydragen-bench --calibrate 2026-11-26, not measured: "));
  EXPECT_FALSE(device_rates_in(csv, kH100, "rates.csv").has_value());
  EXPECT_THAT([] { device_rates_csv("GPU, rev 2", calibrated(), "today"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'GPU, rev 2' has a comma")));
}

// The calibration's file with its beside_margin row replaced by `row` (none: removed).
std::string with_margin_row(const std::string& row) {
  std::istringstream in(device_rates_csv("x", calibrated(), "today"));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const bool margin = line.rfind("x,beside_margin,", 0) == 0;
    if (!margin || !row.empty()) out += (margin ? row : line) + "\n";
  }
  return out;
}

TEST(DeviceRates, AMalformedFileIsNamedWithWhatIsWrong) {
  EXPECT_THAT([] { device_rates_in("device,rate\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rates.csv: the header is not")));
  const std::string header = "device,rate,value,unit,what,measured\n";
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,fast,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'fast' is not a number")));
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,6000,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("x has no wgmma_sm_flops")));
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,6000,ns,the merge, after a launch,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("not six fields")));
  EXPECT_THAT([&] { device_rates_in(header + "x,speed,6000,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'speed' is not a rate of the table")));
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,6,us,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("merge is in ns, not 'us'")));
  EXPECT_THAT([&] { device_rates_in(header + "x,merge,-1,ns,the merge,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'-1' is out of range for ns")));
  // The margin's row, as every rate's: missing, not a number, outside (0, 2] (a ratio to the model's
  // prediction, which may lie either side of 1), another unit, twice.
  EXPECT_THAT([] { device_rates_in(with_margin_row(""), "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rates.csv: x has no beside_margin")));
  EXPECT_THAT([] { device_rates_in(with_margin_row("x,beside_margin,0.97x,ratio,the margin,today"), "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'0.97x' is not a number in row 'x,beside_margin,0.97x")));
  EXPECT_EQ(device_rates_in(with_margin_row("x,beside_margin,1.03,ratio,the margin,today"), "x", "rates.csv")->beside_margin, 1.03);
  EXPECT_THAT([] { device_rates_in(with_margin_row("x,beside_margin,2.5,ratio,the margin,today"), "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'2.5' is out of range for ratio")));
  EXPECT_THAT([] { device_rates_in(with_margin_row("x,beside_margin,0,ratio,the margin,today"), "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'0' is out of range for ratio")));
  EXPECT_THAT([] { device_rates_in(with_margin_row("x,beside_margin,0.97,share,the margin,today"), "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("beside_margin is in ratio, not 'share'")));
  // A share stays within (0, 1].
  EXPECT_THAT([&] { device_rates_in(header + "x,partials_share,1.5,share,the share,today\n", "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'1.5' is out of range for share")));
  const std::string twice = with_margin_row("x,beside_margin,0.9,ratio,the margin,today") + "x,beside_margin,0.95,ratio,again,today\n";
  EXPECT_THAT([&] { device_rates_in(twice, "x", "rates.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("x's beside_margin named twice")));
}

// $HYDRAGEN_RATES: unset, the table first; "file", a calibration's rows even where the table names the
// GPU (to plan with a candidate row without a build); "measure", measured even so; nothing else.
TEST(DeviceRates, HydragenRatesNamesWhereAPlansRatesComeFrom) {
  EXPECT_EQ(rates_source(nullptr), RatesSource::table_first);
  EXPECT_EQ(rates_source(""), RatesSource::table_first);
  EXPECT_EQ(rates_source("file"), RatesSource::file);
  EXPECT_EQ(rates_source("measure"), RatesSource::measure);
  EXPECT_THAT([] { rates_source("table"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("HYDRAGEN_RATES='table': unset (the built-in table")));
}

TEST(DeviceRates, AFileAskedForMustExistAndNameTheGpu) {
  const std::string csv = device_rates_csv(kH100, calibrated(), "today");
  // Asked for: the file's rates, not the table's, for a GPU the table names.
  const std::optional<DeviceRates> file = calibrated_rates(RatesSource::file, csv, kH100, "cand.csv");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->wgmma_sm_flops_per_ns, 1000);
  EXPECT_THAT(file->source, HasSubstr("cand.csv: NVIDIA H100 80GB HBM3"));
  EXPECT_THAT([] { calibrated_rates(RatesSource::file, std::nullopt, kH100, "cand.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("HYDRAGEN_RATES=file: there is no calibration file 'cand.csv'")));
  EXPECT_THAT([&] { calibrated_rates(RatesSource::file, csv, "NVIDIA H200", "cand.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'cand.csv' has no row for 'NVIDIA H200'")));
  // Not asked for (the table has no row): a missing file or row means measure.
  EXPECT_FALSE(calibrated_rates(RatesSource::table_first, std::nullopt, "Imaginary GPU", "cache.csv").has_value());
  EXPECT_FALSE(calibrated_rates(RatesSource::table_first, csv, "Imaginary GPU", "cache.csv").has_value());
  EXPECT_THAT([] { calibrated_rates(RatesSource::table_first, std::string("device,rate\n"), "Imaginary GPU", "cache.csv"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("cache.csv: the header is not")));
}

TEST(DeviceRates, TheDeviceRuleUsesTheRatesADeviceCarriesElseTheTablesElseNone) {
  DeviceLimits h100{132, true, true, kH100};
  EXPECT_THAT(device_and_rates(h100).decision.reason, HasSubstr("device-rates.csv: NVIDIA H100"));
  DeviceRates measured = calibrated();
  measured.source = "measured here";
  const Ruled<std::optional<DeviceRates>> carried = device_and_rates(DeviceLimits{100, true, true, "Imaginary GPU", measured});
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
