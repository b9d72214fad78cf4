#pragma once
// The host's two ceilings, measured the way DESIGN.md section 6 asks for the CPU: a memory stream
// (bytes read + written per second by a large copy on every thread) and an Eigen fp32 GEMM.
#include <string>

#include "hydragen/cost_model.hpp"

namespace hydragen::cpu {

Peaks measure_host_peaks();

// e.g. "AMD EPYC (2 threads)", from /proc/cpuinfo and OpenMP.
std::string host_name();

}  // namespace hydragen::cpu
