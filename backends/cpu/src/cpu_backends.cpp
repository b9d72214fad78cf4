#include "hydragen/cpu/cpu_backends.hpp"

#include "cpu_common.hpp"
#include "plans.hpp"

namespace hydragen {

namespace {

using PlanFactory = std::unique_ptr<AttentionPlan> (*)(const AttentionShape&, const SharingTree&);

class CpuBackend final : public AttentionBackend {
 public:
  CpuBackend(std::string name, std::string summary, PlanFactory factory)
      : name_(std::move(name)), summary_(std::move(summary)), factory_(factory) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return summary_; }
  const DeviceMemory& memory() const override { return host_memory(); }
  Support supports(const AttentionShape& shape, const SharingTree&) const override { return cpu::cpu_supports(shape); }

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape& shape, const SharingTree& tree) const override {
    return factory_(shape, tree);
  }

 private:
  std::string name_, summary_;
  PlanFactory factory_;
};

}  // namespace

void register_cpu_backends(BackendRegistry& registry) {
  const std::string supported = "; dtypes fp32, fp16, bf16 (fp32 accumulate); D <= " + std::to_string(cpu::kMaxHeadDim) +
                                "; any GQA ratio, q_len, tree";
  registry.add(std::make_unique<CpuBackend>(
      "cpu-flat", "per sequence, reads every segment on its path again (OpenMP over sequence x KV head)" + supported,
      cpu::make_flat_plan));
  registry.add(std::make_unique<CpuBackend>(
      "cpu-hydragen", "per segment, the queries of every sequence below it batched into GEMMs, then the LSE merge" + supported,
      cpu::make_hydragen_plan));
}

}  // namespace hydragen
