// NB_MODULE(_leanattn): the compiled half of the `leanattn` Python package. Module attributes
// (__version__, backends, simd_targets) and the registration of every binding file.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "backends.hpp"
#include "bindings.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/version.hpp"

namespace nb = nanobind;

NB_MODULE(_leanattn, m) {
  m.doc() = "Compiled core of leanattn (private: use the `leanattn` package).";
  m.attr("__version__") = std::string(leanattn::version());
  nb::list backends;
  for (const std::string& name : leanattn::python::backend_names()) backends.append(name);
  m.attr("backends") = nb::tuple(backends);
  m.attr("MAX_WORKERS") = leanattn::kMaxWorkers;
  m.attr("MAX_QUERY_TOKENS") = leanattn::kMaxQLen;  // per request and step
  m.def("simd_targets", &leanattn::cpu::simd_targets,
        "SIMD targets of the CPU engine that this CPU supports, best first.");
  m.def("default_cpu_workers", &leanattn::default_workers,
        "Worker threads the CPU backend uses when none is given (one per core).");
  leanattn::python::bind_problem(m);
  leanattn::python::bind_decode(m);
  leanattn::python::bind_plan(m);
  leanattn::python::bind_reference(m);
  leanattn::python::bind_merge(m);
  leanattn::python::bind_step(m);
  leanattn::python::bind_openmp(m);
}
