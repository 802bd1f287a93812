// The executors decode() runs on, chosen by the device of q through the executor seam
// (leanattn/executor.hpp): every executor this build of the library has ("cpu", and "cuda" when
// the CUDA engine is built), kept in one cache (engine_cache.cpp). No backend is named here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leanattn/decode_step.hpp"
#include "leanattn/executor_cache.hpp"
#include "leanattn/parallel_for.hpp"
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
  std::int32_t workers = 0;  // persistent workers; 0 = the executor's default
  int device_id = 0;         // DLPack device id of the arrays
  void* stream = nullptr;    // device executors: the cudaStream_t to launch on (nullptr: default)
};

// Names of the executors built into the module, "cpu" first.
std::vector<std::string> backend_names();

// Runs `call` on executor `backend` (a name of backend_names()): one executor is kept per
// (backend, device, worker count, stream), so that threads are created and plans uploaded once.
// Host executors return when the output is written; device executors launch asynchronously on
// call.stream. Releases the GIL while the executor runs. Throws leanattn::Error for bad input; a
// device that cannot be used raises ValueError naming q.
void run_on(const std::string& backend, const DecodeCall& call);

// The plan executor `backend` makes for `problem` (its line order, split rule and, on a GPU, tile
// size; workers 0: its default count, a GPU's occupancy on device `device_id`). Host executors
// plan without starting threads.
Plan plan_on(const std::string& backend, const DecodeProblem& problem, const PlanOptions& options,
             std::int32_t workers, int device_id);

// The executor name of DLPack device type `device_type` ("cpu", "cuda"); ValueError naming q
// when this build lacks it.
std::string backend_for_device(int device_type);

// A DecodeStep (leanattn/decode_step.hpp) made by executor `backend` for device `device_id` and
// `workers` (0: its default, the count decode() runs with, so that both share the executor), and
// that executor, kept alive for the step's life (the step is destroyed first). Hold
// executor->busy() while using the step.
struct ExecutorStep {
  std::shared_ptr<ExecutorCache::Entry> executor;
  std::unique_ptr<DecodeStep> step;
};
ExecutorStep make_step_on(const std::string& backend, int device_id, std::int32_t workers,
                          const DecodeProblem& shape, const PlanOptions& options,
                          StepPlanning planning);

// The threads the CPU executors run on: the OpenMP team leanattn.use_openmp() lent
// (openmp_team.cpp), or unset (their own pools). Part of the executor cache's key.
cpu::ParallelFor lent_threads();

}  // namespace leanattn::python
