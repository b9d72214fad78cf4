#pragma once
// Choices a backend's plan takes beyond the problem, such as cuda-hydragen's `form=wide`: variants
// kept to compare one implementation's forms, not products of their own. A backend declares each
// option with its values (the first is the default); callers name them after the backend, as in
// "cuda-hydragen:form=wide:wide_kernel=mma64".
#include <string>
#include <utility>
#include <vector>

namespace hydragen {

struct PlanOption {
  std::string name;                 // e.g. "form"
  std::vector<std::string> values;  // what it may be; values.front() is the default
  std::string help;                 // one line: what each value does
};

// What a caller chose: name=value pairs, each name at most once, in the order given.
class PlanOptions {
 public:
  PlanOptions() = default;
  // Parses "form=wide:wide_kernel=mma64" ("" is none). Throws std::invalid_argument naming the bad field.
  static PlanOptions parse(const std::string& text);

  // Throws std::invalid_argument when `name` is already set or either part is empty or holds ':' or '='.
  PlanOptions& set(const std::string& name, const std::string& value);
  bool has(const std::string& name) const;
  // The value set for `name`; throws std::out_of_range when there is none.
  const std::string& at(const std::string& name) const;
  bool empty() const { return values_.empty(); }
  const std::vector<std::pair<std::string, std::string>>& items() const { return values_; }
  std::string text() const;  // "form=wide:wide_kernel=mma64"; "" when empty

  bool operator==(const PlanOptions& other) const { return values_ == other.values_; }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// `chosen` checked against what a backend declares, with every option it leaves out set to its
// default. Throws std::invalid_argument naming the backend, the option and what it accepts.
PlanOptions resolve_options(const std::string& backend, const std::vector<PlanOption>& declared, const PlanOptions& chosen);

// "form=auto|wide|narrow (help) ..." for --list; "" when there are none.
std::string describe_options(const std::vector<PlanOption>& declared);

}  // namespace hydragen
