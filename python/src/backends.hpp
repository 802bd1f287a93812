// The executors decode() can run on, chosen by the device of q. The CPU backend is always built
// (engine_cache.cpp); the CUDA backend (cuda_backend.cpp) is compiled in when the CUDA engine is
// built (python/CMakeLists.txt then defines LEANATTN_PY_HAVE_CUDA), and bind_decode.cpp
// dispatches CUDA arrays to it.
#pragma once

#include <cstdint>
#include <vector>

#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::python {

// One decode step, ready to run: shapes, views of the caller's arrays, and either a plan made by
// the user (leanattn.plan) or the options to make one.
struct DecodeCall {
  const DecodeProblem* problem = nullptr;
  const DecodeTensors* tensors = nullptr;
  const Plan* plan = nullptr;  // null: plan with `options` for `workers`
  PlanOptions options;
  std::int32_t workers = 0;  // persistent workers; 0 = the backend's default
  int device_id = 0;         // DLPack device id of the arrays
  void* stream = nullptr;    // CUDA: the cudaStream_t to launch on (nullptr = default stream)
};

// Names of the backends built into the module, "cpu" first.
std::vector<const char*> backend_names();

// Runs `call` on the CPU engine with `call.workers` threads (one engine kept per thread count).
// Releases the GIL while the engine runs. Throws leanattn::Error for bad input.
void run_cpu(const DecodeCall& call);

// The worker count the CPU backend uses when none is given: one per core.
std::int32_t default_cpu_workers();

#ifdef LEANATTN_PY_HAVE_CUDA
// Launches `call` on the CUDA engine of device `call.device_id` on `call.stream` (asynchronous;
// one engine kept per device, worker count and stream). Throws leanattn::Error for bad input;
// a device that cannot be used raises ValueError naming q. Defined in cuda_backend.cpp.
void run_cuda(const DecodeCall& call);
#endif

}  // namespace leanattn::python
