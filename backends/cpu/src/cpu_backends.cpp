#include "hydragen/cpu/cpu_backends.hpp"

#include "cpu_common.hpp"
#include "plans.hpp"

namespace hydragen {

void register_cpu_backends(BackendRegistry& registry) {
  const std::string supported = "; dtypes fp32, fp16, bf16 (fp32 accumulate); D <= " + std::to_string(cpu::kMaxHeadDim) +
                                "; any GQA ratio, q_len, tree";
  auto supports = [](const AttentionShape& shape, const SharingTree&) { return cpu::cpu_supports(shape); };
  registry.add(make_backend(
      {"cpu-flat", "per sequence, reads every segment on its path again (OpenMP over sequence x KV head)" + supported,
       &host_memory(), supports, without_options(cpu::make_flat_plan), without_options(cpu::flat_workspace_bytes)}));
  registry.add(make_backend(
      {"cpu-hydragen", "per segment, the queries of every sequence below it batched into GEMMs, then the LSE merge" + supported,
       &host_memory(), supports, without_options(cpu::make_hydragen_plan), without_options(cpu::hydragen_workspace_bytes)}));
}

}  // namespace hydragen
