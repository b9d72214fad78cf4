#pragma once
// CPU backends (fp32 accumulate; fp32, fp16 and bf16 inputs; Eigen GEMMs; OpenMP):
//   cpu-flat      per sequence, reads every segment on its path again (OpenMP over sequence x KV head)
//   cpu-hydragen  per segment, the queries of every sequence below it batched into GEMMs, then merge
#include "hydragen/registry.hpp"

namespace hydragen {

void register_cpu_backends(BackendRegistry& registry);

}  // namespace hydragen
