// hydragen-diff: any registered backend against `reference` on a generated problem (DESIGN.md
// section 7). Everything but the choice of registry lives in hydragen_diff_lib (diff/cli.hpp).
#include <exception>
#include <iostream>

#include "diff/cli.hpp"
#include "hydragen/backends.hpp"

int main(int argc, char** argv) {
  const hydragen::BackendRegistry* registry = nullptr;
  try {
    registry = &hydragen::default_registry();
  } catch (const std::exception& e) {  // a backend failed to register: nothing can run
    std::cerr << "hydragen-diff: failed while registering the backends: " << e.what() << '\n';
    return hydragen::diff::exit_fail;
  }
  return hydragen::diff::run_cli(argc, argv, *registry, std::cout, std::cerr);
}
