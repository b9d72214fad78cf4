#include "diff/explain.hpp"

#include <charconv>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "diff/problem_from_options.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/text_file.hpp"
#include "device_rates.hpp"
#include "plan_forms.hpp"
#include "planner.hpp"

namespace hydragen::diff {

namespace {

// "NAME,SMS,wgmma|no-wgmma,pdl|no-pdl" -> the planner's device limits.
cuda::DeviceLimits parse_device(const std::string& text) {
  std::vector<std::string> f;
  std::stringstream in(text);
  for (std::string field; std::getline(in, field, ',');) f.push_back(field);
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--explain-device '" + text + "': " + why + " (NAME,SMS,wgmma|no-wgmma,pdl|no-pdl)");
  };
  if (f.size() != 4) throw bad("four fields expected");
  cuda::DeviceLimits d;
  d.name = f[0];
  const auto [end, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), d.sms);
  if (ec != std::errc{} || end != f[1].data() + f[1].size() || d.sms < 1) throw bad("SMS must be a positive integer");
  if (f[2] != "wgmma" && f[2] != "no-wgmma") throw bad("the third field is wgmma or no-wgmma");
  if (f[3] != "pdl" && f[3] != "no-pdl") throw bad("the fourth field is pdl or no-pdl");
  d.wgmma = f[2] == "wgmma";
  d.dependent_launch = f[3] == "pdl";
  return d;
}

// --explain-rates FILE: the described device's rows of FILE, an error where it names none.
cuda::DeviceRates rates_from_file(const std::string& file, const std::string& device) {
  std::optional<std::string> text;
  try {
    text = hydragen::read_text_if_exists(file);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--explain-rates: '" + file + "' " + e.what());
  }
  if (!text) throw std::invalid_argument("--explain-rates: '" + file + "' does not exist");
  std::optional<cuda::DeviceRates> rates = cuda::device_rates_in(*text, device, file);
  if (!rates) throw std::invalid_argument("--explain-rates: '" + file + "' has no rows for '" + device + "' (--explain-device's NAME)");
  return *rates;
}

std::vector<PlanDecision> planner_decisions(const Options& options, const cuda::DeviceLimits& device, const AttentionShape& shape,
                                           const SharingTree& tree) {
  const std::string& name = parse_backend_choice(options.backend).backend;
  if (name == "cuda-flash") {
    return cuda::plan_flash(shape, tree, resolve_options(name, cuda::flash_options(), options.plan_options), device).decisions.log;
  }
  if (name == "cuda-hydragen") {
    return cuda::plan_hydragen(shape, tree, resolve_options(name, cuda::hydragen_options(), options.plan_options), device)
        .decisions.log;
  }
  if (name == "cuda-hydragen-cublas") {
    resolve_options(name, {}, options.plan_options);
    return cuda::plan_hydragen_cublas(shape, tree, device).decisions.log;
  }
  throw std::invalid_argument("--explain-device: the CUDA planner plans cuda-flash, cuda-hydragen and cuda-hydragen-cublas, not " +
                              name);
}

}  // namespace

std::string explain_text(const Options& options, const BackendRegistry& registry) {
  std::optional<cuda::DeviceLimits> described;
  const AttentionBackend* b = nullptr;
  if (!options.explain_device.empty()) {
    described = parse_device(options.explain_device);
    if (!options.explain_rates.empty()) described->rates = rates_from_file(options.explain_rates, described->name);
  } else {
    b = &registry.get(options.backend);
    if (const std::string why = b->memory().unavailable_reason(); !why.empty()) {
      throw std::invalid_argument("backend '" + b->name() + "' cannot plan here: " + why +
                                  " (--explain-device decides for a device you describe, without one)");
    }
  }
  // A described device's detection rates are its plans' (rule device): the file's, else its table row's.
  const SharingRates rates = described ? cuda::sharing_rates_for(described->rates ? described->rates : cuda::device_rates(described->name))
                                       : detection_rates(options, b->memory());
  const SharingTree tree = tree_from_options(options, rates);
  const AttentionShape shape = shape_from_options(options, tree);
  const SharingTree planned = options.storage == Storage::shared ? tree : tree.flattened();
  const std::string detected = options.tree_source == TreeSource::tokens ? "detect_sharing: " + rates.describe() + "\n" : "";
  if (described) return detected + explain(planner_decisions(options, *described, shape, planned));
  const std::vector<PlanDecision> decisions = b->plan(shape, planned, options.plan_options)->decisions();
  return detected + (decisions.empty() ? b->name() + "'s plan decides nothing: it runs one way\n" : explain(decisions));
}

}  // namespace hydragen::diff
