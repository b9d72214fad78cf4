#include "diff/cli.hpp"

#include <exception>
#include <stdexcept>
#include <string>

#include "diff/diff.hpp"
#include "diff/explain.hpp"
#include "diff/npy_mode.hpp"
#include "diff/options.hpp"
#include "diff/soak.hpp"
#include "hydragen/errors.hpp"

namespace hydragen::diff {

int run_cli(int argc, const char* const argv[], const BackendRegistry& registry, std::ostream& out,
            std::ostream& err) noexcept {
  try {
    Options options;
    switch (options.parse(argc, argv)) {
      case Action::help: out << Options::usage(); return exit_pass;
      case Action::list: out << backend_list(registry); return exit_pass;
      case Action::run: break;
      case Action::random: {
        const SoakSummary summary = run_soak(options, registry, out, err);
        out << soak_summary_line(summary) << '\n';
        return summary.total().failed > 0 ? exit_fail : exit_pass;
      }
    }
    if (!options.npy_dir.empty()) {
      const NpyDiffResult result = run_npy_diff(options, registry);
      out << npy_summary_line(result) << '\n';
      return npy_pass(result) ? exit_pass : exit_fail;
    }
    if (options.explain) {
      out << explain_text(options, registry);
      if (!options.explain_device.empty()) return exit_pass;  // decided for another device: nothing runs here
    }
    const DiffResult result = run_diff(options, registry);
    out << summary_line(result) << '\n';
    return result.comparison.pass ? exit_pass : exit_fail;
  } catch (const std::invalid_argument& e) {  // bad usage, invalid problem, Unsupported, unavailable backend
    err << "hydragen-diff: error: " << one_line(e.what()) << '\n';
    return exit_usage;
  } catch (const OutOfMemory& e) {
    err << "hydragen-diff: out of memory: " << one_line(e.what()) << '\n';
    return exit_fail;
  } catch (const std::exception& e) {
    err << "hydragen-diff: failed while running: " << one_line(e.what()) << '\n';
    return exit_fail;
  } catch (...) {
    err << "hydragen-diff: failed while running: an exception that is not a std::exception\n";
    return exit_fail;
  }
}

}  // namespace hydragen::diff
