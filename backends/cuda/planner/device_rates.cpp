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

const char* const kHeader = "device,rate,value,unit,what,measured";

// Each rate: its column name, its field, its unit and what it is (the table's `what`).
struct RateColumn {
  const char* name;
  double DeviceRates::*field;
  const char* unit;
  const char* what;
};
const RateColumn kRates[] = {
    {"wgmma_sm_flops", &DeviceRates::wgmma_sm_flops_per_ns, "FLOP/ns", "a wgmma block's steady rate on one SM"},
    {"leaf_sm_bytes", &DeviceRates::leaf_sm_bytes_per_ns, "B/ns", "an SM of twelve leaf warps streaming K/V"},
    {"leaf_dram_bytes", &DeviceRates::leaf_dram_bytes_per_ns, "B/ns", "the DRAM rate leaves on every SM reach reading K/V"},
    {"beside_leaf_dram_share", &DeviceRates::beside_leaf_dram_share, "share", "of leaf_dram_bytes that leaves on some of the SMs reach"},
    {"merge", &DeviceRates::merge_ns, "ns", "the merge kernel after a launch that filled the GPU"},
    {"part_switch", &DeviceRates::part_switch_ns, "ns", "a persistent wgmma block's move to its next part"},
    {"fixed", &DeviceRates::fixed_ns, "ns", "a leaf layout's launches and pipeline fills and last tail"},
};

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

}  // namespace

std::optional<DeviceRates> device_rates_in(const std::string& csv, const std::string& device, const std::string& where) {
  std::istringstream table(csv);
  std::string line;
  std::getline(table, line);
  if (line != kHeader) throw std::invalid_argument(where + ": the header is not '" + kHeader + "'");
  std::map<std::string, double> values;
  std::string measured;  // the rows' sources, each once
  while (std::getline(table, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = fields(line);
    if (f.size() < 6) throw std::invalid_argument(where + ": malformed row '" + line + "'");
    if (f[0] != device) continue;
    try {
      values[f[1]] = std::stod(f[2]);
    } catch (const std::exception&) {
      throw std::invalid_argument(where + ": '" + f[2] + "' is not a number in row '" + line + "'");
    }
    if (measured.find(f[5]) == std::string::npos) measured += (measured.empty() ? "" : ", ") + f[5];
  }
  if (values.empty()) return std::nullopt;
  DeviceRates r;
  for (const RateColumn& c : kRates) {
    const auto it = values.find(c.name);
    if (it == values.end()) throw std::invalid_argument(where + ": " + device + " has no " + c.name);
    r.*c.field = it->second;
  }
  r.source = where + ": " + device + " (measured: " + measured + ")";
  return r;
}

std::optional<DeviceRates> device_rates(const std::string& device) {
  try {
    return device_rates_in(detail::kDeviceRatesCsv, device, "device-rates.csv");
  } catch (const std::invalid_argument& e) {
    throw std::logic_error(std::string("the compiled-in table: ") + e.what());
  }
}

std::string device_rates_csv(const std::string& device, const DeviceRates& rates, const std::string& measured) {
  std::ostringstream out;
  out << kHeader << "\n";
  out.precision(6);
  for (const RateColumn& c : kRates) out << device << "," << c.name << "," << rates.*c.field << "," << c.unit << "," << c.what << "," << measured << "\n";
  return out.str();
}

}  // namespace hydragen::cuda
