#pragma once
// The backends a parametrized test runs over, and their names as test-name parts.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"

namespace hydragen::testing {

// A backend spec or case label as a test-name part: every character but letters and digits becomes '_'.
inline std::string identifier(std::string text) {
  for (char& ch : text) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return text;
}

// Every backend but `reference`, the definition the others are measured against.
inline std::vector<std::string> backends_under_test() {
  std::vector<std::string> names;
  for (const std::string& name : list_backends()) {
    if (name != "reference") names.push_back(name);
  }
  return names;
}

inline std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return identifier(info.param); }

}  // namespace hydragen::testing
