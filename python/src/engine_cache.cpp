// The CPU backend (backends.hpp): a small cache of cpu::Engine objects, one per worker count,
// kept alive for the life of the module so that persistent threads are created once, not per
// call. An engine serves one call at a time (its mutex); the GIL is released while it runs, so
// other Python threads go on and calls on other engines run in parallel. Each engine keeps the
// last plan it made for calls without one, reused while the shapes and seq_lens repeat.
#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <nanobind/nanobind.h>

#include "backends.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn::python {

namespace nb = nanobind;

namespace {

// K and V of at most this many bytes are read on the calling thread (EngineOptions): a model's
// decode step at short context is dominated by waking the pool otherwise.
constexpr std::int64_t kInlineKvBytes = 256 * 1024;

struct CachedEngine {
  explicit CachedEngine(std::int32_t workers)
      : engine({.workers = workers, .inline_kv_bytes = kInlineKvBytes}) {}
  cpu::Engine engine;
  std::mutex busy;  // held while a call runs on the engine
  // The last plan made for a call without one, and the options it was made with: every layer of
  // a model's decode step has the same seq_lens and heads, so it is planned once per step.
  std::optional<Plan> last_plan;
  PlanOptions last_options;
};

bool reusable(const CachedEngine& e, const DecodeProblem& p, const PlanOptions& o) {
  if (!e.last_plan) return false;
  const Plan& plan = *e.last_plan;
  return o.strategy == e.last_options.strategy && o.tile_tokens == e.last_options.tile_tokens &&
         plan.kv_heads == p.kv_heads && plan.group_size == p.pair_rows() &&
         plan.head_dim == p.head_dim && plan.q_len == p.q_len && plan.variant == p.variant &&
         plan.seq_lens == p.seq_lens;
}

// At most this many engines (thread pools) are kept; the least recently used idle one goes.
constexpr std::size_t kMaxEngines = 4;

// Most recently used first. Touched with the GIL held only.
std::list<std::shared_ptr<CachedEngine>>& engines() {
  static auto* list = new std::list<std::shared_ptr<CachedEngine>>();  // never destroyed: its
  return *list;  // threads must not be joined during interpreter shutdown
}

std::shared_ptr<CachedEngine> engine_for(std::int32_t workers) {
  auto& list = engines();
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const auto& e) { return e->engine.workers() == workers; });
  if (it != list.end()) {
    list.splice(list.begin(), list, it);
    return list.front();
  }
  auto created = std::make_shared<CachedEngine>(workers);  // throws Error for bad counts
  list.push_front(created);
  if (list.size() > kMaxEngines) {
    // Drop the least recently used engine; a call still running on it keeps it alive until done.
    list.pop_back();
  }
  return created;
}

}  // namespace

std::vector<const char*> backend_names() {
  std::vector<const char*> names = {"cpu"};
#ifdef LEANATTN_PY_HAVE_CUDA
  names.push_back("cuda");
#endif
  return names;
}

std::int32_t default_cpu_workers() {
  return static_cast<std::int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

void run_cpu(const DecodeCall& call) {
  const std::int32_t workers = call.workers > 0       ? call.workers
                               : call.plan != nullptr ? call.plan->workers
                                                      : default_cpu_workers();
  const std::shared_ptr<CachedEngine> cached = engine_for(workers);
  nb::gil_scoped_release no_gil;
  const std::lock_guard<std::mutex> lock(cached->busy);
  if (call.plan != nullptr) {
    cached->engine.run(*call.problem, *call.plan, *call.tensors);
    return;
  }
  if (!reusable(*cached, *call.problem, call.options)) {
    cached->last_plan.reset();
    cached->last_plan = cached->engine.plan(*call.problem, call.options);  // validates
    cached->last_options = call.options;
  }
  cached->engine.run(*call.problem, *cached->last_plan, *call.tensors);
}

}  // namespace leanattn::python
