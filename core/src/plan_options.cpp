#include "hydragen/plan_options.hpp"

#include <algorithm>
#include <stdexcept>

namespace hydragen {

namespace {

bool well_formed(const std::string& part) { return !part.empty() && part.find_first_of(":=") == std::string::npos; }

std::string joined(const std::vector<std::string>& values, const char* separator) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

}  // namespace

PlanOptions PlanOptions::parse(const std::string& text) {
  PlanOptions options;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find(':', begin), text.size());
    const std::string field = text.substr(begin, end - begin);
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("plan option '" + field + "' is not name=value");
    options.set(field.substr(0, eq), field.substr(eq + 1));
    begin = end + 1;
  }
  return options;
}

PlanOptions& PlanOptions::set(const std::string& name, const std::string& value) {
  if (!well_formed(name) || !well_formed(value)) {
    throw std::invalid_argument("plan option '" + name + "=" + value + "': name and value must be non-empty, without ':' or '='");
  }
  if (has(name)) throw std::invalid_argument("plan option '" + name + "' is given twice");
  values_.emplace_back(name, value);
  return *this;
}

bool PlanOptions::has(const std::string& name) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& kv) { return kv.first == name; });
}

const std::string& PlanOptions::at(const std::string& name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  throw std::out_of_range("plan option '" + name + "' is not set");
}

std::string PlanOptions::text() const {
  std::vector<std::string> fields;
  for (const auto& [n, v] : values_) fields.push_back(n + "=" + v);
  return joined(fields, ":");
}

PlanOptions resolve_options(const std::string& backend, const std::vector<PlanOption>& declared, const PlanOptions& chosen) {
  for (const auto& [name, value] : chosen.items()) {
    const auto option = std::find_if(declared.begin(), declared.end(), [&](const PlanOption& o) { return o.name == name; });
    if (option == declared.end()) {
      const std::string offered = declared.empty() ? "it takes none" : "it takes " + describe_options(declared);
      throw std::invalid_argument("backend '" + backend + "' has no option '" + name + "' (" + offered + ")");
    }
    if (std::find(option->values.begin(), option->values.end(), value) == option->values.end()) {
      throw std::invalid_argument("backend '" + backend + "': option " + name + "=" + value + " is not one of " +
                                  joined(option->values, ", "));
    }
  }
  PlanOptions resolved;
  for (const PlanOption& o : declared) resolved.set(o.name, chosen.has(o.name) ? chosen.at(o.name) : o.values.front());
  return resolved;
}

std::string describe_options(const std::vector<PlanOption>& declared) {
  std::vector<std::string> parts;
  for (const PlanOption& o : declared) parts.push_back(o.name + "=" + joined(o.values, "|") + " (" + o.help + ")");
  return joined(parts, "; ");
}

}  // namespace hydragen
