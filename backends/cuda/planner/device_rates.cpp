#include "device_rates.hpp"

#include <charconv>
#include <cmath>
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
// A model off by more than twice its prediction needs its form mended, not a margin.
constexpr double kMaxRatio = 2;

// Each rate: its column name, its field, its unit and what it is (the table's `what`); for a number
// no calibration measures, the value it takes instead and the label saying so.
struct RateColumn {
  const char* name;
  double DeviceRates::*field;
  const char* unit;
  const char* what;
  double rate_free = 0;
  const char* not_measured = nullptr;
};
const RateColumn kRates[] = {
    {"wgmma_sm_flops", &DeviceRates::wgmma_sm_flops_per_ns, "FLOP/ns", "a wgmma block's steady rate on one SM"},
    {"leaf_sm_bytes", &DeviceRates::leaf_sm_bytes_per_ns, "B/ns", "an SM of twelve leaf warps streaming K/V"},
    {"leaf_dram_bytes", &DeviceRates::leaf_dram_bytes_per_ns, "B/ns", "the DRAM rate leaves on every SM reach reading K/V"},
    {"beside_leaf_dram_share", &DeviceRates::beside_leaf_dram_share, "share", "of leaf_dram_bytes that leaves on some of the SMs reach"},
    {"merge", &DeviceRates::merge_ns, "ns", "the merge kernel after a launch that filled the GPU"},
    {"part_switch", &DeviceRates::part_switch_ns, "ns", "a persistent wgmma block's move to its next part"},
    {"fixed", &DeviceRates::fixed_ns, "ns", "a leaf layout's launches and pipeline fills and last tail"},
    {"beside_margin", &DeviceRates::beside_margin, "ratio", "leaf_layout takes beside where predicted at most this ratio to after", 1,
     "not measured: no margin (the model's prediction alone)"},
    {"partials_share", &DeviceRates::partials_share, "share", "of the K/V DRAM rate what fp32 partials and their merge move at",
     kRateFreePartialsShare, "not measured: the K/V DRAM rate (rate-free)"},
};

const RateColumn* column(const std::string& name) {
  for (const RateColumn& c : kRates) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// A share is in (0, 1]; a ratio (a margin for a model's bias) in (0, kMaxRatio]; a time at least 0 (a
// calibration clamps a cost it cannot see to 0); a rate positive.
bool in_range(const RateColumn& c, double value) {
  if (std::string(c.unit) == "share") return value > 0 && value <= 1;
  if (std::string(c.unit) == "ratio") return value > 0 && value <= kMaxRatio;
  if (std::string(c.unit) == "ns") return value >= 0 && std::isfinite(value);
  return value > 0 && std::isfinite(value);
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

// The whole text as a number, or none ("0.97x" is not 0.97).
std::optional<double> number(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
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
    auto bad = [&](const std::string& why) { return std::invalid_argument(where + ": " + why + " in row '" + line + "'"); };
    if (f.size() != 6) throw bad("not six fields (" + std::string(kHeader) + ")");
    if (f[0] != device) continue;
    const RateColumn* c = column(f[1]);
    if (c == nullptr) throw bad("'" + f[1] + "' is not a rate of the table");
    if (f[3] != c->unit) throw bad(f[1] + " is in " + c->unit + ", not '" + f[3] + "'");
    const std::optional<double> value = number(f[2]);
    if (!value) throw bad("'" + f[2] + "' is not a number");
    if (!in_range(*c, *value)) throw bad("'" + f[2] + "' is out of range for " + c->unit);
    if (!values.emplace(f[1], *value).second) throw bad(device + "'s " + f[1] + " named twice");
    if (measured.find(f[5]) == std::string::npos) measured += (measured.empty() ? "" : ", ") + f[5];
  }
  if (values.empty()) return std::nullopt;
  DeviceRates r;
  for (const RateColumn& c : kRates) {
    const auto it = values.find(c.name);
    if (it == values.end()) {
      throw std::invalid_argument(where + ": " + device + " has no " + c.name + " (hydragen-bench --calibrate writes every rate)");
    }
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

RatesSource rates_source(const char* value) {
  const std::string v = value != nullptr ? value : "";
  if (v.empty()) return RatesSource::table_first;
  if (v == "file") return RatesSource::file;
  if (v == "measure") return RatesSource::measure;
  throw std::invalid_argument("HYDRAGEN_RATES='" + v +
                              "': unset (the built-in table, else a calibration file, else measured), 'file' (the calibration "
                              "file even where the table names the GPU) or 'measure' (measured even so)");
}

std::optional<DeviceRates> calibrated_rates(RatesSource source, const std::optional<std::string>& text, const std::string& device,
                                            const std::string& file) {
  if (source == RatesSource::measure) throw std::logic_error("calibrated_rates: measured rates come from no file");
  const bool asked = source == RatesSource::file;
  if (!text) {
    if (!asked) return std::nullopt;
    throw std::invalid_argument("HYDRAGEN_RATES=file: there is no calibration file '" + file +
                                "' (hydragen-bench --calibrate writes one; $HYDRAGEN_RATES_FILE names another)");
  }
  std::optional<DeviceRates> rates = device_rates_in(*text, device, file);
  if (!rates && asked) throw std::invalid_argument("HYDRAGEN_RATES=file: '" + file + "' has no row for '" + device + "'");
  return rates;
}

DeviceRates unmeasured_rates() {
  DeviceRates r;
  std::ostringstream names;
  for (const RateColumn& c : kRates) {
    if (c.not_measured == nullptr) continue;
    r.*c.field = c.rate_free;
    names << (names.tellp() > 0 ? ", " : "") << c.name << " " << c.rate_free;
  }
  r.source = "not measured: " + names.str() + " (rate-free)";
  return r;
}

std::string device_rates_csv(const std::string& device, const DeviceRates& rates, const std::string& measured) {
  for (const std::string* text : {&device, &measured}) {
    if (text->find(',') != std::string::npos) throw std::invalid_argument("device_rates_csv: '" + *text + "' has a comma");
  }
  std::ostringstream out;
  out << kHeader << "\n";
  out.precision(6);
  for (const RateColumn& c : kRates) {
    out << device << "," << c.name << "," << rates.*c.field << "," << c.unit << "," << c.what << ","
        << (c.not_measured != nullptr ? c.not_measured : measured) << "\n";
  }
  return out.str();
}

SharingRates sharing_rates_for(const std::optional<DeviceRates>& rates) {
  if (!rates) return {};
  return {rates->partials_share, rates->source};
}

}  // namespace hydragen::cuda
