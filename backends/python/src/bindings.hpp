#pragma once
// The parts of hydragen._core, each bound in its own file; module.cpp calls them in order.
#include <nanobind/nanobind.h>

namespace hydragen::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);    // module.cpp: Unsupported, OutOfMemory
void bind_problem(nb::module_& m);   // problem.cpp: AttentionShape, SharingTree, SharingRates, detect_sharing
void bind_backends(nb::module_& m);  // backends.cpp: backends(), sharing_rates(), empty()
void bind_plan(nb::module_& m);      // plan.cpp: Plan
void bind_check(nb::module_& m);     // check.cpp: reference(), compare(), Comparison

}  // namespace hydragen::python
