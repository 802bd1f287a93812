// leanattn._lend_openmp: the CPU engine's workers on the process's OpenMP team (the libgomp that
// torch, and so vLLM's CPU worker, runs on and binds to cores) instead of a pool of leanattn's
// own. The Python side (leanattn._openmp) finds the loaded runtime and passes the addresses of
// its entry points: GOMP_parallel, the ABI a `#pragma omp parallel` compiles to, and
// omp_get_thread_num / omp_get_num_threads, so the team is that runtime's and no OpenMP library
// is linked here.
#include <cstdint>
#include <mutex>

#include <nanobind/nanobind.h>

#include "backends.hpp"
#include "bindings.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace nb = nanobind;
using namespace nb::literals;

namespace {

struct OpenMpRuntime {
  void (*parallel)(void (*)(void*), void*, unsigned, unsigned) = nullptr;  // GOMP_parallel
  int (*thread_num)() = nullptr;                                           // omp_get_thread_num
  int (*num_threads)() = nullptr;                                          // omp_get_num_threads
};

// Set once per process (a second runtime is refused: executors hold a pointer to this one).
std::mutex lent_mutex;
OpenMpRuntime lent_runtime;  // guarded by lent_mutex
bool lent = false;           // guarded by lent_mutex

struct TeamCall {
  const OpenMpRuntime* runtime;
  std::int32_t threads;
  cpu::ParallelFor::Job job;
  void* job_context;
};

// cpu::ParallelFor::run on the team: each team thread runs the workers t, t + team, ... so every
// worker runs once whatever team size the runtime grants.
void run_on_team(void* context, std::int32_t threads, cpu::ParallelFor::Job job, void* jc) {
  TeamCall call{static_cast<const OpenMpRuntime*>(context), threads, job, jc};
  call.runtime->parallel(
      [](void* c) {
        const auto& k = *static_cast<const TeamCall*>(c);
        const int team = k.runtime->num_threads();
        for (int t = k.runtime->thread_num(); t < k.threads; t += team) k.job(k.job_context, t);
      },
      &call, static_cast<unsigned>(threads), 0);
}

void lend_openmp(std::uintptr_t parallel, std::uintptr_t thread_num, std::uintptr_t num_threads) {
  const bool all = parallel != 0 && thread_num != 0 && num_threads != 0;
  if (!all && (parallel != 0 || thread_num != 0 || num_threads != 0)) {
    value_error("parallel",
                "GOMP_parallel, omp_get_thread_num and omp_get_num_threads are "
                "given together (all non-zero) or not at all (all zero)");
  }
  const std::lock_guard<std::mutex> lock(lent_mutex);
  lent = all;
  if (!all) return;
  const OpenMpRuntime given{reinterpret_cast<decltype(OpenMpRuntime::parallel)>(parallel),
                            reinterpret_cast<int (*)()>(thread_num),
                            reinterpret_cast<int (*)()>(num_threads)};
  if (lent_runtime.parallel != nullptr &&
      (given.parallel != lent_runtime.parallel || given.thread_num != lent_runtime.thread_num ||
       given.num_threads != lent_runtime.num_threads)) {
    lent = false;
    value_error("parallel",
                "another OpenMP runtime was lent to this process before: one runtime "
                "per process");
  }
  lent_runtime = given;
}

}  // namespace

cpu::ParallelFor lent_threads() {
  const std::lock_guard<std::mutex> lock(lent_mutex);
  if (!lent) return {};
  return {run_on_team, &lent_runtime};
}

void bind_openmp(nb::module_& m) {
  m.def("_lend_openmp", &lend_openmp, "parallel"_a, "thread_num"_a, "num_threads"_a,
        "Run the CPU engine's workers on the OpenMP runtime whose entry points are at these "
        "addresses (0, 0, 0: leanattn's own threads again). Use leanattn.use_openmp().");
}

}  // namespace leanattn::python
