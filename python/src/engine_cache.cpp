// The CPU backend (backends.hpp): a small cache of cpu::Engine objects, one per worker count,
// kept alive for the life of the module so that persistent threads are created once, not per
// call. An engine serves one call at a time (its mutex); the GIL is released while it runs, so
// other Python threads go on and calls on other engines run in parallel.
#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include <nanobind/nanobind.h>

#include "backends.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn::python {

namespace nb = nanobind;

namespace {

struct CachedEngine {
  explicit CachedEngine(std::int32_t workers) : engine({.workers = workers}) {}
  cpu::Engine engine;
  std::mutex busy;  // held while a call runs on the engine
};

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
  } else {
    cached->engine.decode(*call.problem, *call.tensors, call.options);
  }
}

}  // namespace leanattn::python
