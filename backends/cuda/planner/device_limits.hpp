#pragma once
// What the planner needs of the device a plan is made for, asked once when the plan is made (as
// CUTLASS's KernelHardwareInfo): no number here is an H100's. The CUDA backend fills it from the
// current device (launch.hpp: device_limits); tests and --explain name made-up or absent devices.
#include <optional>
#include <string>

#include "device_rates.hpp"

#include "tile_config.hpp"

namespace hydragen::cuda {

struct DeviceLimits {
  int sms = 0;                    // streaming multiprocessors
  bool wgmma = false;             // the sm_90a kernel runs: compute capability 9.0 and a build with sm_90a code
  bool dependent_launch = false;  // programmatic dependent launch (sm_90 and later)
  std::string name = {};          // cudaDeviceProp::name: the row of the device-rates table (device_rates.hpp)
  // The cost models' rates where the caller found them (the CUDA backend: the table, a calibration
  // file, or measured at first use); unset: the table's row for `name`, if any.
  std::optional<DeviceRates> rates = {};
};

inline int resident_blocks(ItemKernel kernel, const DeviceLimits& device) { return blocks_per_sm(kernel) * device.sms; }

}  // namespace hydragen::cuda
