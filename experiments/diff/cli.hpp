#pragma once
// The whole of hydragen-diff except the choice of registry: parse, list or diff, report, and the
// exit-code policy. main() only passes it the process's streams and the default registry, so tests
// can run the tool in-process against backends of their own (a broken one, one without memory).
#include <ostream>

#include "hydragen/registry.hpp"

namespace hydragen::diff {

enum ExitCode : int {
  exit_pass = 0,   // PASS (also --help, --list)
  exit_fail = 1,   // FAIL, or a failure while running (out of memory, a backend error)
  exit_usage = 2,  // bad usage or an invalid problem: any std::invalid_argument, incl. Unsupported
};

// Writes the summary line (or the --help / --list text) to `out` and at most one error line,
// "hydragen-diff: ...", to `err`. Never throws.
int run_cli(int argc, const char* const argv[], const BackendRegistry& registry, std::ostream& out,
            std::ostream& err) noexcept;

}  // namespace hydragen::diff
