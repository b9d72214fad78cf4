#pragma once
// The datasheet ("nominal") peaks of the GPUs the project knows: dense 16-bit tensor-core FLOP/s and
// DRAM bytes/s, the physical limit. The floor a sweep reports uses the peaks it measures in the run
// (the attainable floor); a time's share of the nominal floor says how far it is from the physical
// limit (DESIGN.md section 6). The table is core/nominal-peaks.csv, compiled in (Python reads the
// same file).
#include <optional>
#include <string_view>

#include "hydragen/cost_model.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen {

// The nominal peaks of `device` (its CUDA name, e.g. "NVIDIA H100 80GB HBM3") for 16-bit storage;
// nullopt for a device the table does not name, or fp32 / fp64 (CUDA cores, not in the table).
std::optional<Peaks> nominal_peaks(std::string_view device, DType dtype);

}  // namespace hydragen
