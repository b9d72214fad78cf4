#include "point.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace hydragen::sweep {

namespace {

std::string number(double value, const char* format = "%.6g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// CSV-safe: device names carry no commas, but a detail message might.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The schema: (column, value) in order. Values not measured are empty.
std::vector<std::pair<const char*, std::string>> fields(const Row& r) {
  const ShapePoint& s = r.point.shape;
  const Measurement& m = r.m;
  const bool ok = m.status == "ok";
  const bool floored = ok && m.floor_ms > 0;
  return {{"device", r.device},
          {"commit", r.commit},
          {"backend", r.point.label()},
          {"storage", std::string(storage_name(r.point.storage))},
          {"dtype", std::string(dtype_name(s.dtype))},
          {"B", std::to_string(s.batch)},
          {"P", std::to_string(s.prefix)},
          {"S", std::to_string(s.suffix)},
          {"q_len", std::to_string(s.q_len)},
          {"Hq", std::to_string(s.q_heads)},
          {"Hkv", std::to_string(s.kv_heads)},
          {"D", std::to_string(s.head_dim)},
          {"median_ms", ok ? number(m.median_ms) : ""},
          {"min_ms", ok ? number(m.min_ms) : ""},
          {"max_ms", ok ? number(m.max_ms) : ""},
          {"tflops", ok ? number(m.flops / (m.median_ms * 1e-3) * 1e-12) : ""},
          {"gbps", ok ? number(m.bytes / (m.median_ms * 1e-3) * 1e-9) : ""},
          {"floor_ms", floored ? number(m.floor_ms) : ""},
          {"time_over_floor", floored ? number(m.median_ms / m.floor_ms, "%.3f") : ""},
          {"status", m.status},
          {"detail", m.detail}};
}

}  // namespace

void write_csv_header(std::ostream& out) {
  const std::vector<std::pair<const char*, std::string>> f = fields(Row{});
  for (std::size_t i = 0; i < f.size(); ++i) out << (i ? "," : "") << f[i].first;
  out << '\n';
}

void write_csv_row(std::ostream& out, const Row& row) {
  const std::vector<std::pair<const char*, std::string>> f = fields(row);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::string name = f[i].first;
    out << (i ? "," : "") << (name == "device" || name == "detail" ? quoted(f[i].second) : f[i].second);
  }
  out << '\n';
}

nlohmann::json to_json(const Row& row) {
  static const std::vector<std::string> text = {"device", "commit", "backend", "storage", "dtype", "status", "detail"};
  nlohmann::json j;
  for (const auto& [name, value] : fields(row)) {
    const bool is_text = std::find(text.begin(), text.end(), name) != text.end();
    if (is_text) {
      j[name] = value;
    } else if (value.empty()) {
      j[name] = nullptr;  // not measured
    } else {
      j[name] = std::stod(value);
    }
  }
  return j;
}

}  // namespace hydragen::sweep
