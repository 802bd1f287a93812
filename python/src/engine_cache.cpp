// run_on() (backends.hpp): a small cache of executors (leanattn/executor.hpp), one per (backend,
// device, worker count, stream), kept for the life of the module: CPU threads are created once,
// not per call, and a CUDA engine's uploaded plans and its workspace (which serves one stream)
// are reused. An executor serves one call at a time (its mutex); the GIL is released while it
// runs, so other Python threads go on and calls on other executors run in parallel. Each keeps
// the last plan it made for calls without one, reused while the shapes and seq_lens repeat.
#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <nanobind/nanobind.h>

#include "backends.hpp"
#include "errors.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::python {

namespace nb = nanobind;

namespace {

// K and V of at most this many bytes are read on the calling thread (cpu::EngineOptions): a
// model's decode step at short context is dominated by waking the pool otherwise.
constexpr std::int64_t kInlineKvBytes = 256 * 1024;

using Key = std::tuple<std::string, int, std::int32_t, void*>;  // backend, device, workers, stream

struct CachedExecutor {
  CachedExecutor(const Key& k, std::unique_ptr<Executor> e) : key(k), executor(std::move(e)) {}
  Key key;
  std::unique_ptr<Executor> executor;
  std::mutex busy;  // held while a call runs (or a launch is issued) on the executor
  // The last plan made for a call without one, and what it was made for: every layer of a
  // model's decode step has the same seq_lens and heads, so it is planned once per step.
  std::optional<Plan> last_plan;
  PlanOptions last_options;
  DType last_q_dtype = DType::f16, last_kv_dtype = DType::f16;  // a device's kernel choice
};

bool reusable(const CachedExecutor& e, const DecodeProblem& p, const PlanOptions& o) {
  if (!e.last_plan) return false;
  const Plan& plan = *e.last_plan;
  return o.strategy == e.last_options.strategy && o.tile_tokens == e.last_options.tile_tokens &&
         p.q_dtype == e.last_q_dtype && p.kv_dtype == e.last_kv_dtype &&
         plan.kv_heads == p.kv_heads && plan.group_size == p.pair_rows() &&
         plan.head_dim == p.head_dim && plan.q_len == p.q_len && plan.variant == p.variant &&
         plan.seq_lens == p.seq_lens;
}

// At most this many executors (thread pools, device engines) are kept; the least recently used
// one goes (a call still running on it keeps it alive until done).
constexpr std::size_t kMaxExecutors = 8;

// Most recently used first. Touched with the GIL held only. Never destroyed: threads must not be
// joined, nor device memory freed, during interpreter shutdown.
std::list<std::shared_ptr<CachedExecutor>>& executors() {
  static auto* list = new std::list<std::shared_ptr<CachedExecutor>>();
  return *list;
}

std::shared_ptr<CachedExecutor> executor_for(const Key& key) {
  auto& list = executors();
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e->key == key; });
  if (it != list.end()) {
    list.splice(list.begin(), list, it);
    return list.front();
  }
  const auto& [backend, device, workers, stream] = key;
  std::unique_ptr<Executor> executor;
  try {
    executor = make_executor(backend, {.workers = workers,
                                       .device = device,
                                       .inline_kv_bytes = kInlineKvBytes});  // Error: bad counts
  } catch (const cuda::CudaError& e) {
    value_error("q", std::string("its CUDA device cannot be used: ") + e.what());
  }
  auto created = std::make_shared<CachedExecutor>(key, std::move(executor));
  list.push_front(created);
  if (list.size() > kMaxExecutors) list.pop_back();
  return created;
}

}  // namespace

std::vector<std::string> backend_names() {
  return executor_names();
}

Plan plan_on(const std::string& backend, const DecodeProblem& problem, const PlanOptions& options,
             std::int32_t workers, int device_id) {
  if (backend == "cpu") {  // cpu::Engine::plan without an engine (no threads for a plan)
    return make_plan(problem, Hardware{resolve_workers(workers)}, cpu::cpu_plan_options(options));
  }
  const std::shared_ptr<CachedExecutor> cached =
      executor_for({backend, device_id, workers, nullptr});
  const std::lock_guard<std::mutex> lock(cached->busy);
  return cached->executor->plan(problem, options);
}

void run_on(const std::string& backend, const DecodeCall& call) {
  // A host executor runs a given plan with one thread per plan worker unless told a count.
  const bool host = backend == "cpu";
  std::int32_t workers = call.workers;
  if (host && workers == 0) workers = call.plan != nullptr ? call.plan->workers : default_workers();
  const std::shared_ptr<CachedExecutor> cached =
      executor_for({backend, host ? 0 : call.device_id, workers, host ? nullptr : call.stream});
  nb::gil_scoped_release no_gil;
  const std::lock_guard<std::mutex> lock(cached->busy);
  Executor& executor = *cached->executor;
  if (call.plan != nullptr) {
    executor.run(*call.problem, *call.plan, *call.tensors, call.stream);
    return;
  }
  if (!reusable(*cached, *call.problem, call.options)) {
    cached->last_plan.reset();
    cached->last_plan = executor.plan(*call.problem, call.options);  // validates
    cached->last_options = call.options;
    cached->last_q_dtype = call.problem->q_dtype;
    cached->last_kv_dtype = call.problem->kv_dtype;
  }
  executor.run(*call.problem, *cached->last_plan, *call.tensors, call.stream);
}

}  // namespace leanattn::python
