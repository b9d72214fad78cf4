#include "device_rates.hpp"

#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace hydragen::cuda {

namespace detail {
extern const char* const kDeviceRatesCsv;
}

namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

}  // namespace

std::optional<DeviceRates> device_rates(const std::string& device) {
  std::istringstream table(detail::kDeviceRatesCsv);
  std::string line;
  std::getline(table, line);  // the header
  std::map<std::string, double> rates;
  std::string measured;  // the rows' sources, each once
  while (std::getline(table, line)) {
    const std::vector<std::string> f = fields(line);
    if (f.size() < 6) throw std::logic_error("device-rates.csv: malformed row '" + line + "'");
    if (f[0] != device) continue;
    rates[f[1]] = std::stod(f[2]);
    if (measured.find(f[5]) == std::string::npos) measured += (measured.empty() ? "" : ", ") + f[5];
  }
  if (rates.empty()) return std::nullopt;
  auto rate = [&](const char* name) {
    const auto it = rates.find(name);
    if (it == rates.end()) throw std::logic_error("device-rates.csv: " + device + " has no " + name);
    return it->second;
  };
  DeviceRates r;
  r.wgmma_sm_flops_per_ns = rate("wgmma_sm_flops");
  r.leaf_sm_bytes_per_ns = rate("leaf_sm_bytes");
  r.leaf_dram_bytes_per_ns = rate("leaf_dram_bytes");
  r.beside_leaf_dram_share = rate("beside_leaf_dram_share");
  r.merge_ns = rate("merge");
  r.part_switch_ns = rate("part_switch");
  r.fixed_ns = rate("fixed");
  r.source = "device-rates.csv: " + device + " (measured: " + measured + ")";
  return r;
}

}  // namespace hydragen::cuda
