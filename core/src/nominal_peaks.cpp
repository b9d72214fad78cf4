#include "hydragen/nominal_peaks.hpp"

#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace hydragen {

namespace detail {
extern const char* const kNominalPeaksCsv;  // nominal_peaks_table.cpp, generated
}

namespace {

// device -> peaks, from the CSV's rows after its header (device,tensor_tflops,dram_tbps).
std::unordered_map<std::string, Peaks> parse_table() {
  std::unordered_map<std::string, Peaks> table;
  std::istringstream in(detail::kNominalPeaksCsv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto c1 = line.find(','), c2 = line.rfind(',');
    if (c1 == std::string::npos || c1 == c2) throw std::logic_error("core/nominal-peaks.csv: malformed row '" + line + "'");
    table[line.substr(0, c1)] = Peaks{std::stod(line.substr(c1 + 1, c2 - c1 - 1)) * 1e12, std::stod(line.substr(c2 + 1)) * 1e12};
  }
  return table;
}

}  // namespace

std::optional<Peaks> nominal_peaks(std::string_view device, DType dtype) {
  static const std::unordered_map<std::string, Peaks> table = parse_table();
  if (dtype != DType::fp16 && dtype != DType::bf16) return std::nullopt;
  const auto it = table.find(std::string(device));
  if (it == table.end()) return std::nullopt;
  return it->second;
}

}  // namespace hydragen
