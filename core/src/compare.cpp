#include "hydragen/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace hydragen {

namespace {

// error / bound, infinite for NaN; an exact 0 meets a bound of 0.
double bound_ratio(double error, double bound) {
  if (std::isnan(error)) return std::numeric_limits<double>::infinity();
  if (error == 0) return 0;
  return error / bound;  // +inf for a bound of 0
}

}  // namespace

Tolerance tolerance_for(DType dtype, double logit_bound) {
  const bool exact = dtype == DType::fp64;
  const double cond = 4.0 * (exact ? unit_roundoff(DType::fp64) : unit_roundoff(DType::fp32)) * logit_bound;
  double rtol = 0, atol = 0, l2 = 0;
  switch (dtype) {
    case DType::fp64: rtol = atol = l2 = 1e-12; break;
    case DType::fp32: rtol = atol = l2 = 1e-5; break;
    case DType::fp16:
    case DType::bf16:
      rtol = l2 = 2 * unit_roundoff(dtype);
      atol = 4 * unit_roundoff(dtype);
      break;
  }
  return Tolerance{rtol + cond, atol + cond, l2 + cond, (exact ? 1e-12 : 1e-5) + cond};
}

Tolerance with_merge_lse_bound(Tolerance strict, DType o_dtype) {
  strict.lse_abs = unit_roundoff(o_dtype);
  strict.lse_bound = LseBound::merge;
  return strict;
}

Comparison compare_rows(const std::vector<double>& out, const std::vector<double>& ref, std::size_t row, const Tolerance& tol) {
  if (out.size() != ref.size()) {
    throw std::invalid_argument("compare: output has " + std::to_string(out.size()) + " values, the reference " +
                                std::to_string(ref.size()));
  }
  if (row == 0 || ref.size() % row != 0) {
    throw std::invalid_argument("compare: " + std::to_string(ref.size()) + " values are not whole rows of " + std::to_string(row));
  }
  Comparison c;
  c.tolerance = tol;
  double ref_sq = 0, err_sq = 0;
  for (double r : ref) ref_sq += r * r;
  double worst_excess = -std::numeric_limits<double>::infinity();
  double row_rms = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (i % row == 0) {
      double sq = 0;
      for (std::size_t j = i; j < i + row; ++j) sq += ref[j] * ref[j];
      row_rms = std::sqrt(sq / static_cast<double>(row));
    }
    const double err = std::fabs(out[i] - ref[i]);  // NaN if either is NaN
    const double bound = tol.rtol * std::fabs(ref[i]) + tol.atol * row_rms;
    const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err - bound;
    if (!(err <= bound)) ++c.failed_elements;
    c.o_bound_ratio = std::fmax(c.o_bound_ratio, bound_ratio(err, bound));
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst_index = i;
    }
    // A NaN stays the maximum: fmax alone would drop it at the next finite error.
    if (!std::isnan(c.max_abs_error)) c.max_abs_error = std::isnan(err) ? err : std::fmax(c.max_abs_error, err);
    err_sq += std::isnan(err) ? std::numeric_limits<double>::infinity() : err * err;
  }
  if (!ref.empty()) {
    c.worst_value = out[c.worst_index];
    c.worst_reference = ref[c.worst_index];
  }
  c.rel_l2_error = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  c.o_bound_ratio = std::fmax(c.o_bound_ratio, bound_ratio(c.rel_l2_error, tol.l2));
  c.pass = c.failed_elements == 0 && c.rel_l2_error <= tol.l2;
  return c;
}

Comparison compare(const Results& out, const Results& ref, const Tolerance& tol) {
  if (out.o.size() != ref.o.size() || out.lse.size() != ref.lse.size()) {
    throw std::invalid_argument("compare: output has " + std::to_string(out.o.size()) + " O and " +
                                std::to_string(out.lse.size()) + " LSE values, the reference " +
                                std::to_string(ref.o.size()) + " and " + std::to_string(ref.lse.size()));
  }
  // A row is the D outputs of one query row and head: O holds one per LSE value.
  const std::size_t row = ref.lse.empty() ? std::max<std::size_t>(ref.o.size(), 1) : ref.o.size() / ref.lse.size();
  if (!ref.lse.empty() && ref.o.size() % ref.lse.size() != 0) {
    throw std::invalid_argument("compare: " + std::to_string(ref.o.size()) + " O values are not whole rows of " +
                                std::to_string(ref.lse.size()) + " LSE values");
  }
  Comparison c = ref.o.empty() ? Comparison{} : compare_rows(out.o, ref.o, row, tol);
  c.tolerance = tol;
  double lse_worst_excess = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    const double l = out.lse[i], r = ref.lse[i];
    double err = 0;
    if (std::isinf(r) || std::isinf(l)) {
      err = (l == r) ? 0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(l - r);  // NaN stays NaN
    }
    const double bound = tol.lse_abs + tol.lse_tol * std::fmax(1.0, std::isinf(r) ? 1.0 : std::fabs(r));
    const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err - bound;
    if (!(err <= bound)) ++c.lse_failed;
    c.lse_bound_ratio = std::fmax(c.lse_bound_ratio, bound_ratio(err, bound));
    if (excess > lse_worst_excess) {
      lse_worst_excess = excess;
      c.lse_worst_index = i;
    }
    if (!std::isnan(c.lse_max_abs_error)) c.lse_max_abs_error = std::isnan(err) ? err : std::fmax(c.lse_max_abs_error, err);
  }
  c.pass = c.failed_elements == 0 && c.lse_failed == 0 && c.rel_l2_error <= tol.l2;
  return c;
}

Comparison compare_outside(Results out, const Results& ref, DType o_dtype, double logit_bound, LseBound lse_bound) {
  if (out.lse.empty()) out.lse = ref.lse;  // not compared
  const Tolerance strict = tolerance_for(o_dtype, logit_bound);
  return compare(out, ref, lse_bound == LseBound::strict ? strict : with_merge_lse_bound(strict, o_dtype));
}

namespace {

std::string format(const char* fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

}  // namespace

std::string comparison_text(const AttentionShape& shape, const Comparison& c) {
  const std::size_t lse_count = static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
  const std::size_t o_count = lse_count * shape.head_dim;
  return "max_abs_err=" + format("%.3e", c.max_abs_error) +                                      //
         " rel_l2_err=" + format("%.3e", c.rel_l2_error) +                                       //
         " lse_err=" + format("%.3e", c.lse_max_abs_error) +                                     //
         " tol=(rtol " + format("%.2e", c.tolerance.rtol) + ", atol " + format("%.2e", c.tolerance.atol) +
         "*row_rms, l2 " + format("%.2e", c.tolerance.l2) + ", lse " + lse_tolerance_text(c.tolerance) + ")" +
         " o_failed=" + std::to_string(c.failed_elements) + "/" + std::to_string(o_count) +      //
         " lse_failed=" + std::to_string(c.lse_failed) + "/" + std::to_string(lse_count) +       //
         " worst_o=" + index_name(shape, c.worst_index, false) +                                 //
         " (out " + format("%.9g", c.worst_value) + ", ref " + format("%.9g", c.worst_reference) + ")" +
         " worst_lse=" + index_name(shape, c.lse_worst_index, true) + (c.pass ? " PASS" : " FAIL");
}

std::string outside_summary(const AttentionShape& shape, const std::string& tree, DType o_dtype, bool lse_given,
                            const Comparison& comparison) {
  return shape.describe() + " tree=(" + tree + ") o=" + std::string(dtype_name(o_dtype)) +
         " lse=" + (lse_given ? "given " : "absent ") + comparison_text(shape, comparison);
}

std::string Comparison::summary() const {
  char line[512];
  std::snprintf(line, sizeof line,
                "max_abs_err=%.3e rel_l2_err=%.3e lse_max_abs_err=%.3e tol(rtol=%.2e atol=%.2e*row_rms l2=%.2e lse=%s) "
                "o_failed=%zu lse_failed=%zu worst_o[%zu]=%.9g ref=%.9g %s",
                max_abs_error, rel_l2_error, lse_max_abs_error, tolerance.rtol, tolerance.atol, tolerance.l2,
                lse_tolerance_text(tolerance).c_str(), failed_elements, lse_failed, worst_index, worst_value, worst_reference,
                pass ? "PASS" : "FAIL");
  return line;
}

std::string lse_tolerance_text(const Tolerance& t) {
  char text[64];
  if (t.lse_bound == LseBound::merge) {
    std::snprintf(text, sizeof text, "%.2e+%.2e merge", t.lse_abs, t.lse_tol);
  } else {
    std::snprintf(text, sizeof text, "%.2e strict", t.lse_tol);
  }
  return text;
}

std::string index_name(const AttentionShape& shape, std::size_t flat_index, bool is_lse) {
  const std::size_t d = is_lse ? 1 : static_cast<std::size_t>(shape.head_dim);
  const std::size_t dim = flat_index % d;
  const std::size_t head = flat_index / d % shape.q_heads;
  const std::size_t t = flat_index / d / shape.q_heads % shape.q_len;
  const std::size_t b = flat_index / d / shape.q_heads / shape.q_len;
  std::string s = "[b=" + std::to_string(b) + ", t=" + std::to_string(t) + ", h=" + std::to_string(head);
  if (!is_lse) s += ", d=" + std::to_string(dim);
  return s + "]";
}

}  // namespace hydragen
