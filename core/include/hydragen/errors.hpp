#pragma once
// Exceptions with a meaning callers act on. Everything else is std::invalid_argument (bad input,
// the message names the field and value) or std::runtime_error (a failure while running).
#include <cstddef>
#include <stdexcept>
#include <string>

namespace hydragen {

// An allocation failed. The sweep records such a point as "oom" instead of aborting.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(const std::string& where, std::size_t requested_bytes, const std::string& detail);
  std::size_t requested_bytes() const { return requested_; }

 private:
  std::size_t requested_;
};

// A backend was asked for a problem it does not support; what() gives the reason.
class Unsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace hydragen
