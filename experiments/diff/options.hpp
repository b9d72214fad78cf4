#pragma once
// hydragen-diff's command line (DESIGN.md section 7), as one Options struct with parse and usage in
// the manner of the CUTLASS examples. Parsing does no I/O: bad usage throws std::invalid_argument
// with a one-line message naming the flag, and the caller decides what to print and return.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hydragen/dtype.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/tree_spec.hpp"

namespace hydragen::diff {

// Where the sharing tree comes from. A shape is text (--tree); the other two are not shapes, so they
// are flags of their own, and either one replaces --tree.
enum class TreeSource {
  shape,     // --tree TEXT (hydragen/tree_spec.hpp, docs/tools.md#trees) over --prefix and the suffixes
  segments,  // --parents, --lengths, --leaves: SharingTree::from_parents, segment by segment
  tokens,    // --tokens FILE: detect_sharing of its token-id lists (one sequence a line), the cost model's rule
};

// What the command line asks for.
enum class Action { run, list, help, random };

struct Options {
  static constexpr int default_batch = 4;

  std::string backend;                          // --backend NAME[:option=value...]: required unless --list or --random (then a list)
  PlanOptions plan_options;                     //   the options after the name (e.g. cuda-hydragen:form=wide)
  bool list = false;                            // --list: print the registered backends
  std::optional<int> batch;                     // --batch B; unset: default_batch, or the --leaves count
  int prefix = 256;                             // --prefix P: tokens of the root segment
  int suffix = 32;                              // --suffix S: every sequence's own tokens
  std::optional<std::vector<int>> suffix_lens;  // --suffix-lens: ragged S, one per sequence (replaces --suffix)
  int q_len = 1;                                // --q-len: queries per sequence (causal within the leaf)
  int q_heads = 8;                              // --q-heads Hq
  int kv_heads = 1;                             // --kv-heads Hkv (Hq % Hkv == 0)
  int head_dim = 128;                           // --head-dim D
  DType dtype = DType::fp32;                    // --dtype of Q, K, V, O for the backend under test
  Storage storage = Storage::shared;            // --storage: shared (one copy per segment) | redundant
  TreeSource tree_source = TreeSource::shape;   // which of the three gives the tree
  TreeSpec tree;                                // --tree (default prefix)
  std::vector<int> parents, lengths, leaves;    // --parents, --lengths, --leaves (segments)
  std::string tokens;                           // --tokens FILE (tokens)
  std::uint64_t seed = 0;                       // --seed of the N(0,1) inputs
  double logit_scale = 1.0;                     // --logit-scale: Q is multiplied by it (1e4: extreme logits)
  std::optional<double> scale;                  // --scale of the scores; unset: 1/sqrt(D)
  std::string npy_dir;                          // --npy-dir DIR: problem and external O from .npy (npy_mode.hpp)
  std::string write_reference;                  // --write-reference OUT: our reference O and LSE as .npy (with --npy-dir)
  DType reference_dtype = DType::fp64;          // --reference-dtype: O's dtype in OUT (LSE: lse_dtype of it)
  std::string reference_dir;                    // --reference-dir REF: the fp64 reference --write-reference left
                                                // there for these inputs, read instead of computed
  bool strict_lse = false;                      // --strict-lse: judge an external LSE by our backends' bound
  bool explain = false;                         // --explain: print the plan's decisions before the check
  std::string explain_device;                   // --explain-device NAME,SMS,wgmma|no-wgmma,pdl|no-pdl: the CUDA planner's
                                                //   decisions for that device, no GPU needed, and no check (explain.hpp)
  std::string explain_rates;                    // --explain-rates FILE: that device's rates from FILE (device-rates.csv's
                                                //   form, e.g. a calibration's) instead of the compiled-in table
  int random = 0;                               // --random N: soak over N drawn problems (soak.hpp); --seed seeds the draw
  std::vector<BackendChoice> random_backends;   //   --backend A,B,...: the backends it checks; empty: every available one

  // Fills the fields from argv (argv[0] is the program). Returns what to do; throws
  // std::invalid_argument on bad usage (unknown flag, bad value, flags that do not fit together).
  Action parse(int argc, const char* const argv[]);

  static std::string usage();  // the --help text
};

// "1, 2,3" -> {1, 2, 3}; "" -> {}. Throws std::invalid_argument naming the flag and the bad entry.
std::vector<int> parse_int_list(std::string_view flag, std::string_view text);

}  // namespace hydragen::diff
