// run_on() and plan_on() (backends.hpp) on the library's ExecutorCache (executor_cache.hpp), one
// for the life of the module, keyed by (backend, device, worker count, stream): CPU threads are
// created once, not per call, and a CUDA engine's uploaded plans and its workspace (which serves
// one stream) are reused; each executor keeps the last plan it made for calls without one. Only
// the binding's concerns live here: the GIL is released while an executor runs (other Python
// threads go on, calls on other executors run in parallel), a device that cannot be used raises
// ValueError naming q, and the cache is never destroyed at interpreter shutdown.
#include <memory>
#include <mutex>
#include <string>

#include <nanobind/nanobind.h>

#include <nanobind/ndarray.h>

#include "backends.hpp"
#include "errors.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/executor_cache.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::python {

namespace nb = nanobind;

namespace {

// K and V of at most this many bytes are read on the calling thread (cpu::EngineOptions): a
// model's decode step at short context is dominated by waking the pool otherwise.
constexpr std::int64_t kInlineKvBytes = 256 * 1024;

// At most this many executors (thread pools, device engines) are kept; the least recently used
// one goes (a call still running on it keeps it alive until done).
constexpr std::size_t kMaxExecutors = 8;

// Never destroyed: threads must not be joined, nor device memory freed, during interpreter
// shutdown.
ExecutorCache& executors() {
  static auto* cache = new ExecutorCache(kMaxExecutors);
  return *cache;
}

std::shared_ptr<ExecutorCache::Entry> executor_for(const std::string& backend, int device,
                                                   std::int32_t workers, void* stream) {
  try {
    return executors().get(backend,
                           {.workers = workers,
                            .device = device,
                            .inline_kv_bytes = kInlineKvBytes,
                            .parallel = backend == "cpu" ? lent_threads() : cpu::ParallelFor{}},
                           stream);  // Error: bad counts
  } catch (const cuda::CudaError& e) {
    value_error("q", std::string("its CUDA device cannot be used: ") + e.what());
  }
}

}  // namespace

std::vector<std::string> backend_names() {
  return executor_names();
}

std::string backend_for_device(int device_type) {
  const char* backend = device_type == nb::device::cpu::value    ? "cpu"
                        : device_type == nb::device::cuda::value ? "cuda"
                                                                 : "";
  std::string built;
  for (const std::string& name : backend_names()) {
    if (name == backend) return name;
    built += (built.empty() ? "" : ", ") + name;
  }
  value_error("q", "lives on DLPack device type " + std::to_string(device_type) +
                       ", but this leanattn was built with the backends (" + built + ") only");
}

ExecutorStep make_step_on(const std::string& backend, int device_id, std::int32_t workers,
                          const DecodeProblem& shape, const PlanOptions& options,
                          StepPlanning planning) {
  const bool host = backend == "cpu";
  if (host && workers == 0) workers = default_workers();  // run_on()'s key for decode()
  ExecutorStep made;
  made.executor = executor_for(backend, host ? 0 : device_id, workers, nullptr);
  const std::lock_guard<std::mutex> lock(made.executor->busy());
  try {
    made.step = made.executor->executor().make_step(shape, options, planning);
  } catch (const cuda::CudaError& e) {
    value_error("q", std::string("its CUDA device cannot be used: ") + e.what());
  }
  return made;
}

Plan plan_on(const std::string& backend, const DecodeProblem& problem, const PlanOptions& options,
             std::int32_t workers, int device_id) {
  if (backend == "cpu") {  // cpu::Engine::plan without an engine (no threads for a plan)
    return make_plan(problem, Hardware{resolve_workers(workers)}, cpu::cpu_plan_options(options));
  }
  const std::shared_ptr<ExecutorCache::Entry> cached =
      executor_for(backend, device_id, workers, nullptr);
  const std::lock_guard<std::mutex> lock(cached->busy());
  return cached->executor().plan(problem, options);
}

void run_on(const std::string& backend, const DecodeCall& call) {
  // A host executor runs a given plan with one thread per plan worker unless told a count.
  const bool host = backend == "cpu";
  std::int32_t workers = call.workers;
  if (host && workers == 0) workers = call.plan != nullptr ? call.plan->workers : default_workers();
  const std::shared_ptr<ExecutorCache::Entry> cached =
      executor_for(backend, host ? 0 : call.device_id, workers, host ? nullptr : call.stream);
  nb::gil_scoped_release no_gil;
  const std::lock_guard<std::mutex> lock(cached->busy());
  Executor& executor = cached->executor();
  const Plan& plan =
      call.plan != nullptr ? *call.plan : cached->plan_for(*call.problem, call.options);
  executor.run(*call.problem, plan, *call.tensors, call.stream);
}

}  // namespace leanattn::python
