// hydragen._core: the C++ library over DLPack tensors. Thin by design: every rule (shapes, dtypes,
// tolerances, which backend runs) is the library's; the Python package (hydragen/) adds the
// caller's framework (its stream, its allocator).
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "hydragen/errors.hpp"

namespace hydragen::python {

void bind_errors(nb::module_& m) {
  // Everything else keeps nanobind's mapping: std::invalid_argument -> ValueError (bad input, the
  // message names the field), std::runtime_error -> RuntimeError (CUDA errors carry their string).
  nb::exception<Unsupported>(m, "Unsupported", PyExc_ValueError);
  nb::exception<OutOfMemory>(m, "OutOfMemory", PyExc_MemoryError);
}

}  // namespace hydragen::python

NB_MODULE(_core, m) {
  using namespace hydragen::python;
  bind_errors(m);
  bind_problem(m);
  bind_backends(m);
  bind_plan(m);
  bind_check(m);
}
