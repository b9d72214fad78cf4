#include "plan.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <optional>
#include <stdexcept>
#include <tuple>

#include "bindings.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/problem.hpp"

namespace hydragen::python {

namespace {

// The backend a spec names, with its options; "auto" leaves the choice to default_backend.
const AttentionBackend& chosen_backend(const BackendChoice& choice, const Place& place, const AttentionShape& shape,
                                       const SharingTree& tree) {
  if (choice.storage_named) {
    throw std::invalid_argument("backend '" + choice.backend + ":" + std::string(storage_name(choice.storage)) +
                                "': the storage is how your K and V are laid out, not a choice here (redundant "
                                "storage is a flattened tree with each sequence's whole path as its segment)");
  }
  if (choice.backend == "auto") {
    if (!choice.options.empty()) throw std::invalid_argument("backend 'auto' takes no options: name the backend");
    return default_backend(place.memory, shape, tree);
  }
  const AttentionBackend& b = backend(choice.backend);
  if (b.memory().name() != place.memory) {
    throw std::invalid_argument("backend '" + b.name() + "' runs on " + std::string(b.memory().name()) +
                                " memory, but the tensors are on " + place.text());
  }
  if (const std::string why = b.memory().unavailable_reason(); !why.empty()) {
    throw std::invalid_argument("backend '" + b.name() + "' cannot run here: " + why);
  }
  return b;
}

// leaf_lengths: int32 [B] where the plan runs.
const int* leaf_lengths_view(const std::optional<DlTensor>& t, const AttentionShape& shape, const Place& place) {
  if (!t) return nullptr;
  check_layout(*t, {{"B", shape.num_seqs}});
  const nb::dlpack::dtype d = t->array.dtype();
  if (d.code != static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int) || d.bits != 32 || d.lanes != 1) {
    throw std::invalid_argument("leaf_lengths: dtype must be int32");
  }
  if (const Place p = t->place(); p.memory != place.memory || p.device_id != place.device_id) {
    throw std::invalid_argument("leaf_lengths: on " + p.text() + ", expected on " + place.text());
  }
  return static_cast<const int*>(t->data());
}

}  // namespace

Plan::Plan(nb::handle q, nb::handle k, nb::handle v, const SharingTree& tree, const std::string& backend, float scale)
    : tree_(tree) {
  const DlTensor q_t = import_tensor(q, "q");
  const Segments k_s = import_segments(k, "k"), v_s = import_segments(v, "v");
  shape_ = problem_shape(q_t, k_s, tree_, scale);
  place_ = q_t.place();
  check_tensor(q_t, query_dims(shape_), shape_.dtype, place_);
  check_segments(k_s, shape_, tree_, place_);
  check_segments(v_s, shape_, tree_, place_);
  const BackendChoice choice = parse_backend_choice(backend);
  const AttentionBackend& b = chosen_backend(choice, place_, shape_, tree_);
  label_ = BackendChoice{b.name(), Storage::shared, false, choice.options}.label();
  nb::gil_scoped_release release;  // a plan may allocate and upload
  plan_ = b.plan(shape_, tree_, choice.options);
}

void Plan::run(nb::handle q, nb::handle k, nb::handle v, nb::handle o, nb::handle lse, std::uintptr_t stream,
               nb::handle leaf_lengths) {
  const DlTensor q_t = import_tensor(q, "q");
  const Segments k_s = import_segments(k, "k"), v_s = import_segments(v, "v");
  const DlTensor o_t = import_tensor(o, "o", true), lse_t = import_tensor(lse, "lse", true);
  std::optional<DlTensor> lengths;
  if (!leaf_lengths.is_none()) lengths = import_tensor(leaf_lengths, "leaf_lengths");
  check_tensor(q_t, query_dims(shape_), shape_.dtype, place_);
  check_segments(k_s, shape_, tree_, place_);
  check_segments(v_s, shape_, tree_, place_);
  check_tensor(o_t, query_dims(shape_), shape_.dtype, place_);
  check_tensor(lse_t, lse_dims(shape_), lse_dtype(shape_.dtype), place_);
  const AttentionInputs inputs{const_view(q_t), segment_tensors(k_s, shape_, tree_), segment_tensors(v_s, shape_, tree_),
                               leaf_lengths_view(lengths, shape_, place_)};
  const AttentionOutputs outputs{view(o_t), view(lse_t)};
  nb::gil_scoped_release release;
  plan_->run(inputs, outputs, Stream{reinterpret_cast<void*>(stream)});
}

void bind_plan(nb::module_& m) {
  nb::class_<Plan>(m, "Plan", "A backend's plan for one problem (hydragen.plan makes it; its run is reusable).")
      .def(nb::init<nb::handle, nb::handle, nb::handle, const SharingTree&, const std::string&, float>(), nb::arg("q"),
           nb::arg("k"), nb::arg("v"), nb::arg("tree"), nb::arg("backend") = "auto", nb::arg("scale") = 0.0f)
      .def("run", &Plan::run, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("o"), nb::arg("lse"),
           nb::arg("stream") = 0, nb::arg("leaf_lengths").none() = nb::none())
      .def_prop_ro("shape", &Plan::shape)
      .def_prop_ro("tree", &Plan::tree)
      .def_prop_ro("backend", &Plan::backend)
      .def("explain", &Plan::explain, "How the plan decided to run, one rule a line (docs/planner-rules.md); \"\" for a plan "
           "that decides nothing")
      .def_prop_ro("memory", [](const Plan& p) { return p.place().memory; })
      .def_prop_ro("device_id", [](const Plan& p) { return p.place().device_id; })
      .def_prop_ro("dtype", [](const Plan& p) { return std::string(dtype_name(p.shape().dtype)); })
      .def_prop_ro("lse_dtype", [](const Plan& p) { return std::string(dtype_name(lse_dtype(p.shape().dtype))); })
      .def_prop_ro("o_shape", [](const Plan& p) {
        const AttentionShape& s = p.shape();
        return std::make_tuple(s.num_seqs, s.q_len, s.q_heads, s.head_dim);
      })
      .def_prop_ro("lse_shape", [](const Plan& p) {
        const AttentionShape& s = p.shape();
        return std::make_tuple(s.num_seqs, s.q_len, s.q_heads);
      });
}

}  // namespace hydragen::python
