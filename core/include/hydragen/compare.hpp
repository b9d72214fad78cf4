#pragma once
// How a backend's output is judged against the fp64 reference (DESIGN.md section 5).
//
// Every element is checked; NaN never passes; two -inf LSEs (a query that attends nothing) agree.
//   O element:  |o - r| <= rtol * |r| + atol * rms(ref row), a row being the D outputs of one
//               (sequence, query token, head), i.e. O's values per LSE value
//   O overall:  ||o - r|| / ||r|| <= l2
//   LSE:        |l - r| <= lse_abs + lse_tol * max(1, |r|)   (lse_abs is 0 under the strict bound)
// The numbers come from the dtype, plus a conditioning term 4 * u * logit_bound for the rounding of
// the scores themselves (u: the unit roundoff of the arithmetic, fp32 or fp64), which only matters
// for the extreme-logit problems. docs/design.md derives them.
#include <cstddef>
#include <string>
#include <vector>

#include "hydragen/problem.hpp"

namespace hydragen {

// Which LSE bound a Tolerance holds: `strict` (fp32-grade, what our backends promise) or `merge`
// (what a merge at the output's precision can see; for kernels we did not write).
enum class LseBound { strict, merge };

struct Tolerance {
  double rtol = 0;
  double atol = 0;  // in units of the rms of the element's row of ref O
  double l2 = 0;    // relative L2 error of the whole O
  double lse_tol = 0;
  double lse_abs = 0;  // an absolute LSE allowance (natural log); 0 under the strict bound
  LseBound lse_bound = LseBound::strict;
};

// fp64: all 1e-12; fp32: all 1e-5; fp16/bf16 (unit roundoff u): rtol = 2u and l2 = 2u (twice the
// rounding of the exact result to the dtype), atol = 4u (the probabilities rounded to the dtype
// before the P V product, as tensor-core kernels do, add an error of about u/sqrt(3) times the
// rms of the element's row), lse_tol = 1e-5 (LSE is fp32 whatever the storage). Each plus 4 u_arith logit_bound,
// u_arith = 2^-53 for fp64, 2^-24 otherwise.
Tolerance tolerance_for(DType dtype, double logit_bound);

// `strict` with the LSE bound of an output we did not write: an LSE off by d weighs its partial in
// a merge by e^d ~ 1 + d, so the merged O moves by at most d times its own size; d up to the unit
// roundoff of O's dtype is one rounding of that O, which no merge at that precision can see. Hence
// lse_abs = u(o_dtype) (bf16 3.9e-3, fp16 4.9e-4, fp32 6e-8) on top of the strict bound.
Tolerance with_merge_lse_bound(Tolerance strict, DType o_dtype);

// The LSE bound as the summary lines print it: "1.18e-05 strict" or "3.91e-03+1.18e-05 merge".
std::string lse_tolerance_text(const Tolerance& tolerance);

struct Comparison {
  double max_abs_error = 0;  // max |o - r|
  double rel_l2_error = 0;   // ||o - r|| / ||r||
  std::size_t worst_index = 0;  // flat index into O of the element furthest past its bound
  double worst_value = 0, worst_reference = 0;
  std::size_t failed_elements = 0;  // O elements outside their bound (NaN counts)
  double lse_max_abs_error = 0;
  std::size_t lse_worst_index = 0;
  std::size_t lse_failed = 0;
  // How far the worst element is from failing: max over elements of error / bound (O also its
  // relative L2 error / l2); a check passes when its ratio is <= 1. NaN counts as infinite; an
  // error of 0 against a bound of 0 (an empty attention's O = 0) as 0.
  double o_bound_ratio = 0, lse_bound_ratio = 0;
  bool pass = false;
  Tolerance tolerance;

  std::string summary() const;  // one line: errors, tolerance, worst index, PASS/FAIL
};

Comparison compare(const Results& out, const Results& ref, const Tolerance& tolerance);

// O's rule alone, over any values in rows of `row` (compare() calls it with a row per LSE value; the
// decoder's logits check with a row per sequence, issue 42): every element against rtol and atol
// times its row's rms, and the relative L2 error. The LSE fields stay 0. Throws
// std::invalid_argument for sizes that differ or are not whole rows.
Comparison compare_rows(const std::vector<double>& out, const std::vector<double>& ref, std::size_t row, const Tolerance& tolerance);

// An output computed outside this library (hydragen-diff --npy-dir, the Python package's compare)
// against the fp64 reference: O under tolerance_for(o_dtype, logit_bound); LSE, when out.lse is not
// empty, under `lse_bound` (merge: what a merge at O's precision can see; strict: our backends'
// bound). An empty out.lse is not compared.
Comparison compare_outside(Results out, const Results& ref, DType o_dtype, double logit_bound,
                           LseBound lse_bound = LseBound::merge);

// The comparison part of hydragen-diff's summary line: max abs error, relative L2 error, LSE error,
// tolerance, failed counts, worst O and LSE elements, PASS or FAIL.
std::string comparison_text(const AttentionShape& shape, const Comparison& comparison);

// hydragen-diff's line for an outside output, after --npy-dir's "npy=DIR": the problem, the tree's
// description, O's dtype, whether LSE was given, then comparison_text.
std::string outside_summary(const AttentionShape& shape, const std::string& tree, DType o_dtype, bool lse_given,
                            const Comparison& comparison);

// "[b, t, h, d]" for a flat index into O (or "[b, t, h]" into LSE, with head_dim = 1).
std::string index_name(const AttentionShape& shape, std::size_t flat_index, bool is_lse);

}  // namespace hydragen
