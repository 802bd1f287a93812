// Registration of the _leanattn module's functions and classes, one function per bind_*.cpp file.
// Called once by module.cpp. The public API (docstrings, defaults, framework handling) is the
// Python package python/leanattn, which calls these private functions.
#pragma once

#include <nanobind/nanobind.h>

namespace leanattn::python {

void bind_problem(nanobind::module_& m);    // Problem
void bind_decode(nanobind::module_& m);     // _decode
void bind_plan(nanobind::module_& m);       // Plan, _make_plan
void bind_reference(nanobind::module_& m);  // _reference
void bind_merge(nanobind::module_& m);      // _merge_states
void bind_step(nanobind::module_& m);       // _Step, _step_new, _step_run
void bind_openmp(nanobind::module_& m);     // _lend_openmp

}  // namespace leanattn::python
