#pragma once
// The rates the planner's cost models use, one table (device-rates.csv, compiled in), each row
// labelled with the device it was measured on. A device the table does not name has no rates: the
// rules that need them keep their rate-free choice and say so (rules.hpp), never another device's.
#include <optional>
#include <string>

#include "hydragen/sharing_rates.hpp"

namespace hydragen::cuda {

struct DeviceRates {
  double wgmma_sm_flops_per_ns = 0;   // a wgmma block's steady rate on one SM
  double leaf_sm_bytes_per_ns = 0;    // an SM of whole-SM leaf warps streaming K/V
  double leaf_dram_bytes_per_ns = 0;  // the DRAM rate leaves on many SMs reach
  double beside_leaf_dram_share = 0;  // of that rate, what leaves on some of the SMs reach
  double merge_ns = 0;                // the merge kernel after a launch that filled the GPU
  double part_switch_ns = 0;          // a persistent wgmma block's move to its next part
  double fixed_ns = 0;                // a leaf layout's launches, pipeline fills and last tail
  double beside_margin = 0;           // leaf_layout: beside where predicted at most this ratio to after
  double partials_share = 0;          // of the K/V's DRAM rate, what fp32 partials and their merge move at
  std::string source;                 // where they come from: "device-rates.csv: NAME (measured ...)"
};

// The table's rates for the device named `device` (cudaDeviceProp::name); none when it has no row
// for it. Throws std::logic_error when the compiled-in table is malformed.
std::optional<DeviceRates> device_rates(const std::string& device);

// The same from another file of the table's columns (a calibration's: hydragen-bench --calibrate),
// `where` naming it in the source. Throws std::invalid_argument naming `where` and what is wrong: a
// row that is malformed (not six fields, a rate the table has no column for, another unit, a value
// that is not a number or out of its range: a share in (0, 1], a ratio in (0, 2], a time >= 0, a rate > 0), named
// twice, or a rate the device's rows lack.
std::optional<DeviceRates> device_rates_in(const std::string& csv, const std::string& device, const std::string& where);

// Where plans take a GPU's rates from, as $HYDRAGEN_RATES asks.
enum class RatesSource {
  table_first,  // unset or empty: the table's row, else a calibration file's, else measured at first use
  file,         // "file": the calibration file's row even where the table names the GPU
  measure,      // "measure": measured at first use even where the table names the GPU
};

// $HYDRAGEN_RATES's value (null: unset) as a source. Throws std::invalid_argument for any other
// value, naming the ones there are.
RatesSource rates_source(const char* value);

// A calibration file's rates for `device` under `source` (never RatesSource::measure): `text` is the
// file's (none: it does not exist), `file` its path. None where a plan should measure instead; for
// RatesSource::file, std::invalid_argument where the file does not exist or has no row for `device`
// (the user asked for that file's rates), as for a malformed row under either source.
std::optional<DeviceRates> calibrated_rates(RatesSource source, const std::optional<std::string>& text, const std::string& device,
                                            const std::string& file);

// A calibration's rates before it measures: the numbers no calibration measures at their rate-free
// values (beside_margin 1: no margin, the model's prediction alone; partials_share as core's
// SharingRates), every other 0; `source` names the unmeasured ones.
DeviceRates unmeasured_rates();

// A calibration's rows (header first) for `device` at `rates`: each labelled `measured`, but those of
// the numbers it does not measure (unmeasured_rates), labelled so. Throws std::invalid_argument for a
// device name or label with a comma (the table's separator).
std::string device_rates_csv(const std::string& device, const DeviceRates& rates, const std::string& measured);

// What detection's cost model (min_shared_tokens) weighs partials at on a device with `rates`: their
// partials_share, labelled with their source; core's rate-free SharingRates where there are none.
SharingRates sharing_rates_for(const std::optional<DeviceRates>& rates);

}  // namespace hydragen::cuda
