#include "point.hpp"

#include "hydragen/detect.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <stdexcept>
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
          {"tree", s.tree_text()},
          {"median_ms", ok ? number(m.median_ms) : ""},
          {"min_ms", ok ? number(m.min_ms) : ""},
          {"max_ms", ok ? number(m.max_ms) : ""},
          {"tflops", ok ? number(m.flops / (m.median_ms * 1e-3) * 1e-12) : ""},
          {"gbps", ok ? number(m.bytes / (m.median_ms * 1e-3) * 1e-9) : ""},
          {"floor_ms", floored ? number(m.floor_ms) : ""},
          {"time_over_floor", floored ? number(m.median_ms / m.floor_ms, "%.3f") : ""},
          {"nominal_share", ok && m.nominal_ms > 0 ? number(m.nominal_ms / m.median_ms, "%.3f") : ""},
          {"status", m.status},
          {"detail", m.detail},
          {"decisions", m.decisions}};
}

// The whole text as a number: a hand-edited CSV must not turn "12abc" into 12.
double number_in(const std::string& column, const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw std::invalid_argument("column " + column + ": '" + text + "' is not a number");
  }
  return value;
}

}  // namespace

SharingTree ShapePoint::sharing_tree(const SharingRates& rates) const {
  if (tokens.empty()) return tree.build(batch, prefix, suffix);
  return detect_sharing(read_token_lists(tokens), make_shape(batch, q_len, q_heads, kv_heads, head_dim, dtype), rates).tree;
}

std::string ShapePoint::tree_text() const { return tokens.empty() ? tree.text() : "tokens:" + tokens; }

void write_csv_header(std::ostream& out) {
  const std::vector<std::pair<const char*, std::string>> f = fields(Row{});
  for (std::size_t i = 0; i < f.size(); ++i) out << (i ? "," : "") << f[i].first;
  out << '\n';
}

void write_csv_row(std::ostream& out, const Row& row) {
  const std::vector<std::pair<const char*, std::string>> f = fields(row);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::string name = f[i].first;
    out << (i ? "," : "") << (name == "device" || name == "detail" || name == "decisions" ? quoted(f[i].second) : f[i].second);
  }
  out << '\n';
}

nlohmann::json to_json(const Row& row) {
  std::vector<std::string> columns, values;
  for (auto& [name, value] : fields(row)) {
    columns.emplace_back(name);
    values.push_back(std::move(value));
  }
  return to_json(columns, values);
}

nlohmann::json to_json(const std::vector<std::string>& columns, const std::vector<std::string>& values) {
  static const std::vector<std::string> text = {"device", "commit", "backend", "storage", "dtype", "tree", "status", "detail", "decisions"};
  nlohmann::json j;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::string& name = columns[i];
    const std::string& value = values.at(i);
    if (std::find(text.begin(), text.end(), name) != text.end()) {
      j[name] = value;
    } else if (value.empty()) {
      j[name] = nullptr;  // not measured
    } else {
      j[name] = number_in(name, value);
    }
  }
  return j;
}

}  // namespace hydragen::sweep
