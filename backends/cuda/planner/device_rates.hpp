#pragma once
// The rates the planner's cost models use, one table (device-rates.csv, compiled in), each row
// labelled with the device it was measured on. A device the table does not name has no rates: the
// rules that need them keep their rate-free choice and say so (rules.hpp), never another device's.
#include <optional>
#include <string>

namespace hydragen::cuda {

struct DeviceRates {
  double wgmma_sm_flops_per_ns = 0;   // a wgmma block's steady rate on one SM
  double leaf_sm_bytes_per_ns = 0;    // an SM of whole-SM leaf warps streaming K/V
  double leaf_dram_bytes_per_ns = 0;  // the DRAM rate leaves on many SMs reach
  double beside_leaf_dram_share = 0;  // of that rate, what leaves on some of the SMs reach
  double merge_ns = 0;                // the merge kernel after a launch that filled the GPU
  double part_switch_ns = 0;          // a persistent wgmma block's move to its next part
  double fixed_ns = 0;                // a leaf layout's launches, pipeline fills and last tail
  std::string source;                 // where they come from: "device-rates.csv: NAME (measured ...)"
};

// The table's rates for the device named `device` (cudaDeviceProp::name); none when it has no row
// for it. Throws std::logic_error when the compiled-in table is malformed.
std::optional<DeviceRates> device_rates(const std::string& device);

// The same from another file of the table's columns (a calibration's: hydragen-bench --calibrate),
// `where` naming it in the source. Throws std::invalid_argument naming `where` and the row that is
// malformed or the rate a device's rows lack.
std::optional<DeviceRates> device_rates_in(const std::string& csv, const std::string& device, const std::string& where);

// The table's rows (header first) for `device` at `rates`, each labelled `measured`.
std::string device_rates_csv(const std::string& device, const DeviceRates& rates, const std::string& measured);

}  // namespace hydragen::cuda
