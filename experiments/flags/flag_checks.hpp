#pragma once
// The checks every tool's command line shares (issue 17 item 5), run on a value's text before CLI11
// converts it: CLI11 alone reads "" as 0, "010" as octal 8 and "0x10" as hex, clamps "-1" and 2^64
// into an unsigned flag, and lets a flag given twice silently keep one of its values.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hydragen::flags {

inline std::string empty_error(const std::string& text) { return text.empty() ? "empty value" : ""; }

// Decimal text that fits Int (and is not empty).
template <class Int>
CLI::Validator decimal() {
  return {[](std::string& text) {
            Int value{};
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (text.empty() || (ec == std::errc{} && end == text.data() + text.size())) return empty_error(text);
            return "'" + text + "' is not a decimal integer in [" + std::to_string(std::numeric_limits<Int>::min()) +
                   ", " + std::to_string(std::numeric_limits<Int>::max()) + "]";
          },
          ""};
}

// Throws std::invalid_argument "FLAG: WHY", the one-line usage error the tools report with exit 2.
[[noreturn]] inline void fail(const std::string& flag, const std::string& why) { throw std::invalid_argument(flag + ": " + why); }

// Throws std::invalid_argument naming the first flag given more than once (parse with
// MultiOptionPolicy::TakeLast so that CLI11 counts the repeats instead of refusing them itself).
inline void reject_repeats(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 1) {
      throw std::invalid_argument(option->get_name() + " is given " +
                                  (option->count() == 2 ? "twice" : std::to_string(option->count()) + " times"));
    }
  }
}

// "a,b" -> {"a", "b"}; throws std::invalid_argument "FLAG: 'TEXT' has an empty entry" for an empty one.
inline std::vector<std::string> split_list(std::string_view flag, const std::string& text) {
  std::vector<std::string> entries;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    entries.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (entries.back().empty()) throw std::invalid_argument(std::string(flag) + ": '" + text + "' has an empty entry");
    if (comma == std::string::npos) return entries;
    start = comma + 1;
  }
}

// The entries of a list, each through `parse`; a value given twice ("FLAG: 'ENTRY' is listed twice")
// would do its work twice.
template <typename T, typename Parse>
std::vector<T> parse_list(std::string_view flag, const std::string& text, Parse parse) {
  std::vector<T> values;
  for (const std::string& entry : split_list(flag, text)) {
    T value = parse(entry);
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      throw std::invalid_argument(std::string(flag) + ": '" + entry + "' is listed twice");
    }
    values.push_back(std::move(value));
  }
  return values;
}

// Decimal text of a T that is at least `min`; throws std::invalid_argument "FLAG: 'TEXT' is not an
// integer >= MIN" (or "... is out of range").
template <typename T>
T parse_integer(std::string_view flag, const std::string& text, T min) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) throw std::invalid_argument(std::string(flag) + ": '" + text + "' is out of range");
  if (ec != std::errc{} || end != text.data() + text.size() || value < min) {
    throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not an integer >= " + std::to_string(min));
  }
  return value;
}

// A comma list of such integers, none listed twice.
inline std::vector<int> parse_integers(std::string_view flag, const std::string& text, int min) {
  return parse_list<int>(flag, text, [&](const std::string& entry) { return parse_integer(flag, entry, min); });
}

// A size in bytes as nccl-tests writes it: decimal, optionally followed by K, M or G (powers of 1024),
// at least 1; throws std::invalid_argument "FLAG: 'TEXT' is not a size in bytes (8, 64K, 128M, 1G)".
inline std::int64_t parse_bytes(std::string_view flag, const std::string& text) {
  std::string digits = text;
  std::int64_t unit = 1;
  if (!text.empty()) {
    const std::string units = "KMG";
    if (const std::size_t u = units.find(text.back()); u != std::string::npos) {
      unit = std::int64_t{1} << (10 * (u + 1));
      digits.pop_back();
    }
  }
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || value < 1 ||
      value > std::numeric_limits<std::int64_t>::max() / unit) {
    throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not a size in bytes (8, 64K, 128M, 1G)");
  }
  return value * unit;
}

}  // namespace hydragen::flags
