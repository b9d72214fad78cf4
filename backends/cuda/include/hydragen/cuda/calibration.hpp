#pragma once
// The CUDA planner's device rates (docs/planner-rules.md, "Device rates"), measured on the current GPU:
// hydragen-bench --calibrate writes them where later runs read them.
#include <string>

namespace hydragen::cuda {

// Where plans look for calibrated rates of a GPU the built-in table does not name:
// $HYDRAGEN_RATES_FILE, else $XDG_CACHE_HOME/hydragen/device-rates.csv, else
// ~/.cache/hydragen/device-rates.csv.
std::string calibration_file();

struct Calibration {
  std::string csv;     // the rates as device-rates.csv rows (header first), labelled with the date
  std::string report;  // a line per rate: measured, and the built-in table's where it names this GPU
};
// Measures the rates on the current GPU (it must run the wgmma kernel: std::invalid_argument otherwise).
Calibration calibrate_device_rates();

}  // namespace hydragen::cuda
