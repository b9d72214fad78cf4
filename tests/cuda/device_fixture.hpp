#pragma once
// Tests that need a GPU derive from this: without one they skip, printing why.
#include <gtest/gtest.h>

#include <string>

#include "hydragen/cuda/memory.hpp"

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = hydragen::cuda::device_memory().unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
