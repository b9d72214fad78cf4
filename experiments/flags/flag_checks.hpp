#pragma once
// The checks every tool's command line shares (issue 17 item 5), run on a value's text before CLI11
// converts it: CLI11 alone reads "" as 0, "010" as octal 8 and "0x10" as hex, clamps "-1" and 2^64
// into an unsigned flag, and lets a flag given twice silently keep one of its values.
#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>

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

}  // namespace hydragen::flags
