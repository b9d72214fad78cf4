#pragma once
// The planner's rates (planner/device_rates.hpp) measured on the current device, for a GPU that
// device-rates.csv does not name: synthetic plans of the segment kernels, each timed at two sizes so
// that the difference is the steady rate (tens of milliseconds in all).
#include <optional>

#include "device_limits.hpp"

namespace hydragen::cuda {

// Every rate of DeviceRates on the current device (it must run the wgmma kernel: the rates serve only
// the leaf_layout rule of a wgmma launch). `source` says they were measured here.
DeviceRates measure_device_rates();

// The rates for plans on `device` (the current one): device-rates.csv's row for its name; else a
// calibration file's (calibration_file()) row; else, for a wgmma device, measured at first use and
// kept for the process; else none. HYDRAGEN_RATES=file takes the calibration file's row even where
// the table has one (an error where it has none), HYDRAGEN_RATES=measure measures even so.
// Asked once per device per process.
std::optional<DeviceRates> resolve_device_rates(const DeviceLimits& device);

}  // namespace hydragen::cuda
