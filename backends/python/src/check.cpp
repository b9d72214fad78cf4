// The fp64 reference on the caller's tensors, a caller's output judged against it by the rules and
// the line of hydragen-diff --npy-dir (compare_outside, outside_summary), and hydragen-diff's inputs
// (make_problem), so a problem checked here is one the tool can draw again.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"
#include "tensors.hpp"

namespace hydragen::python {

namespace {

using HostArray = nb::ndarray<nb::numpy, double>;

// What compare() returns: the comparison and hydragen-diff's line for it.
struct OutsideComparison {
  Comparison comparison;
  std::string summary;
};

// The problem the tensors hold, on the host: every dtype widens to fp64 exactly.
Problem host_problem(nb::handle q, nb::handle k, nb::handle v, const SharingTree& tree, float scale) {
  const DlTensor q_t = import_tensor(q, "q");
  const Segments k_s = import_segments(k, "k"), v_s = import_segments(v, "v");
  const AttentionShape shape = problem_shape(q_t, k_s, tree, scale);
  return Problem{shape, tree, host_values(q_t, query_dims(shape)), host_segment_values(k_s, shape, tree),
                 host_segment_values(v_s, shape, tree)};
}

// The `reference` backend on the problem's values, which are exact in fp64 already.
Results reference_results(Problem& problem) {
  const DType dtype = problem.shape.dtype;
  problem.shape.dtype = DType::fp64;
  Results results;
  {
    nb::gil_scoped_release release;
    results = run_backend(backend("reference"), problem);
  }
  problem.shape.dtype = dtype;
  return results;
}

HostArray host_array(std::vector<double> values, const Dims& dims) {
  auto* owned = new std::vector<double>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<std::size_t> shape;
  for (const Dim& d : dims) shape.push_back(static_cast<std::size_t>(d.size));
  return HostArray(owned->data(), shape.size(), shape.data(), owner);
}

// (o [B, q_len, Hq, D], lse [B, q_len, Hq]), fp64 NumPy arrays.
std::tuple<HostArray, HostArray> reference_tensors(nb::handle q, nb::handle k, nb::handle v, const SharingTree& tree, float scale) {
  Problem problem = host_problem(q, k, v, tree, scale);
  Results r = reference_results(problem);
  return {host_array(std::move(r.o), query_dims(problem.shape)), host_array(std::move(r.lse), lse_dims(problem.shape))};
}

// o [B, q_len, Hq, D] in any float dtype, lse [B, q_len, Hq] or None (not compared); dtype: the
// tolerance's ("bf16" for a bf16 kernel's O handed over widened), else o's; strict_lse: our backends'
// LSE bound instead of the merge bound.
OutsideComparison compare_tensors(nb::handle o, nb::handle lse, nb::handle q, nb::handle k, nb::handle v,
                          const SharingTree& tree, float scale, bool strict_lse, const std::optional<std::string>& dtype) {
  Problem problem = host_problem(q, k, v, tree, scale);
  const DlTensor o_t = import_tensor(o, "o");
  const DType o_dtype = dtype ? parse_dtype(*dtype) : o_t.dtype();
  Results out{host_values(o_t, query_dims(problem.shape)), {}};
  if (!lse.is_none()) out.lse = host_values(import_tensor(lse, "lse"), lse_dims(problem.shape));
  const Results ref = reference_results(problem);
  const Comparison c = compare_outside(std::move(out), ref, o_dtype, logit_bound(problem),
                                       strict_lse ? LseBound::strict : LseBound::merge);
  return {c, outside_summary(problem.shape, tree.describe(), o_dtype, !lse.is_none(), c)};
}

// make_problem's q [B, q_len, Hq, D] and each segment's k and v [length, Hkv, D]: fp64 NumPy arrays
// whose values are exact in shape.dtype.
std::tuple<HostArray, std::vector<HostArray>, std::vector<HostArray>> problem_tensors(const AttentionShape& shape,
                                                                                     const SharingTree& tree,
                                                                                     std::uint64_t seed,
                                                                                     double logit_scale) {
  Problem p = make_problem(shape, tree, seed, logit_scale);
  std::vector<HostArray> k, v;
  for (int s = 0; s < tree.num_segments(); ++s) {
    const Dims dims = segment_dims(shape, tree, s);
    k.push_back(host_array(std::move(p.k[static_cast<std::size_t>(s)]), dims));
    v.push_back(host_array(std::move(p.v[static_cast<std::size_t>(s)]), dims));
  }
  return {host_array(std::move(p.q), query_dims(shape)), std::move(k), std::move(v)};
}

}  // namespace

void bind_check(nb::module_& m) {
  nb::class_<OutsideComparison>(m, "Comparison", "An output against the fp64 reference; .ok, and .summary: "
                                                 "hydragen-diff's line.")
      .def_prop_ro("ok", [](const OutsideComparison& c) { return c.comparison.pass; })
      .def_ro("summary", &OutsideComparison::summary)
      .def_prop_ro("max_abs_error", [](const OutsideComparison& c) { return c.comparison.max_abs_error; })
      .def_prop_ro("rel_l2_error", [](const OutsideComparison& c) { return c.comparison.rel_l2_error; })
      .def_prop_ro("lse_max_abs_error", [](const OutsideComparison& c) { return c.comparison.lse_max_abs_error; })
      .def_prop_ro("failed_elements", [](const OutsideComparison& c) { return c.comparison.failed_elements; })
      .def_prop_ro("lse_failed", [](const OutsideComparison& c) { return c.comparison.lse_failed; })
      .def_prop_ro("o_bound_ratio", [](const OutsideComparison& c) { return c.comparison.o_bound_ratio; },
                   "max over O's elements of error / bound (and of the relative L2 error / its bound): <= 1 passes")
      .def_prop_ro("lse_bound_ratio", [](const OutsideComparison& c) { return c.comparison.lse_bound_ratio; },
                   "max over LSE's elements of error / bound (0 when LSE was not given)")
      .def("__str__", [](const OutsideComparison& c) { return c.summary; })
      .def("__repr__", [](const OutsideComparison& c) { return "<Comparison " + c.summary + ">"; });
  m.def("reference", &reference_tensors, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("tree"), nb::arg("scale") = 0.0f,
        "The fp64 reference (o, lse) on the tensors' values, as NumPy arrays.");
  m.def("compare", &compare_tensors, nb::arg("o"), nb::arg("lse").none(), nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("tree"), nb::arg("scale") = 0.0f, nb::arg("strict_lse") = false, nb::arg("dtype").none() = nb::none());
  m.def("make_problem", &problem_tensors, nb::arg("shape"), nb::arg("tree"), nb::arg("seed"), nb::arg("logit_scale") = 1.0,
        "(q, k, v): hydragen-diff's inputs for --seed and --logit-scale, as fp64 NumPy arrays exact in shape.dtype.");
}

}  // namespace hydragen::python
