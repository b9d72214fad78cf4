#pragma once
// hydragen-diff --npy-dir DIR: the problem (Q, K, V per segment, and the sharing tree from spec.json)
// read from files, an external O (and optionally LSE) compared against our fp64 reference, and the
// reference optionally written back as .npy (--write-reference OUT).
//
// DIR holds:
//   spec.json   {"q_heads": 8, "kv_heads": 1, "head_dim": 128, "q_len": 1 (optional, default 1),
//                "scale": 0.088 (optional, default 1/sqrt(head_dim)),
//                "parents": [-1, 0, 0], "lengths": [16, 4, 5], "leaves": [1, 2]}
//   q.npy       [B, q_len, Hq, D]     B = len(leaves)
//   k<i>.npy    [lengths[i], Hkv, D]  one per segment i; v<i>.npy likewise
//   o.npy       [B, q_len, Hq, D]     the external output to check (optional with --write-reference)
//   lse.npy     [B, q_len, Hq]        optional: natural-log LSE; not compared when absent
// Q, K and V must share one dtype (fp16, bf16, fp32 or fp64; see npy.hpp); O's dtype picks the
// tolerance (tolerance_for). --write-reference writes o.npy and lse.npy in fp64 to OUT (O in
// --reference-dtype when given, rounded to nearest even; LSE then in lse_dtype of it), and inputs.txt,
// the fingerprint of the inputs they belong to. OUT must exist. --reference-dir REF reads an fp64
// reference written so instead of computing it: several outputs of one problem (a peer's forms) cost
// one reference. REF's inputs.txt must match DIR's inputs.
#include <optional>
#include <string>

#include "diff/options.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {

// Reads spec.json and q/k/v from dir into a Problem whose shape.dtype is the inputs' dtype.
// Throws std::invalid_argument naming the file and the mismatch.
Problem load_npy_problem(const std::string& dir);

// The problem's shape and tree and a 64-bit hash of its Q, K and V values, one line: what a written
// reference was computed from.
std::string inputs_fingerprint(const Problem& problem);

struct NpyDiffResult {
  std::string dir;
  AttentionShape shape;  // dtype: the inputs'
  std::string tree;      // tree.describe()
  std::optional<DType> o_dtype;  // unset: no o.npy (only --write-reference)
  bool lse_given = false;
  std::optional<Comparison> comparison;
  std::string wrote;  // --write-reference directory, or empty
  std::string reference_from;  // --reference-dir directory, or empty
};

NpyDiffResult run_npy_diff(const Options& options, const BackendRegistry& registry);
std::string npy_summary_line(const NpyDiffResult& result);
// True when the result passes (or there was nothing to compare).
inline bool npy_pass(const NpyDiffResult& r) { return !r.comparison || r.comparison->pass; }

}  // namespace hydragen::diff
