#pragma once
// Everything a schedule-driven plan decided, without a GPU: the schedule and its kernels and how its
// launches run, for a device given by its limits. The golden table of decisions (tests/) is written
// from these.
#include <string>

#include "hydragen/attention.hpp"
#include "kernels/launch.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

struct PlanFacts {
  Schedule schedule;
  ItemKernel wide = ItemKernel::narrow, narrow = ItemKernel::narrow;
  int leaf_sms = 0;
  int narrow_workers = 0, wide_workers = 0;
  bool fold = false, run_merge = false, overlap_merge = false;
};

// `backend`: cuda-flash, cuda-hydragen or cuda-hydragen-cublas; `options` resolved (every option set).
PlanFacts plan_facts(const std::string& backend, const AttentionShape& shape, const SharingTree& tree,
                     const PlanOptions& options, const DeviceLimits& device);

}  // namespace hydragen::cuda
