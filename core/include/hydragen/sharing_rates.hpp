#pragma once
// The rate the cost model's sharing rule (min_shared_tokens, cost_model.hpp) weighs a shared
// segment's partials at, and where it comes from. Core measures no device: a caller that runs on
// one passes that device's rate (DeviceMemory::sharing_rates(): the CUDA planner's device-rates
// table for a GPU it names), and every other caller the rate-free default below.
#include <string>

namespace hydragen {

// Partials and their merge at the DRAM rate the K/V streams at: what a device nobody measured gets.
inline constexpr double kRateFreePartialsShare = 1.0;

struct SharingRates {
  // Of the DRAM rate the K/V streams at, the share fp32 partials and their merge move at: (0, 1].
  double partials_share = kRateFreePartialsShare;
  std::string source = "no measured rate";

  // "partials at 0.5 of the K/V DRAM rate (SOURCE)", for the tools that report what detection did.
  std::string describe() const;
};

}  // namespace hydragen
