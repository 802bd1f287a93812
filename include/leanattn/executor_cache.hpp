// ExecutorCache: executors (executor.hpp) kept across calls, for engines that call decode once
// per layer per step. Making an executor costs more than a decode step at short context (the CPU
// engine starts its threads; the CUDA engine allocates its workspace and uploads each new plan),
// and every layer of a model's step has the same shapes and seq_lens, so a serving loop keeps its
// executors here and, beside each, the last plan it made (plan_for).
//
//   leanattn::ExecutorCache cache(8);  // at most 8 executors, the least recently used goes
//   std::shared_ptr<leanattn::ExecutorCache::Entry> e = cache.get("cpu", {.workers = 4});
//   const std::lock_guard<std::mutex> busy(e->busy());  // one call at a time per executor
//   e->executor().run(problem, e->plan_for(problem, options), tensors);
//
// Used by the Python module (one cache for the module's life), `leanattn check` and the tests.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "leanattn/executor.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"

namespace leanattn {

class ExecutorCache {
 public:
  // One kept executor, the mutex its callers hold while they use it, and its last plan.
  class Entry {
   public:
    explicit Entry(std::unique_ptr<Executor> executor) : executor_(std::move(executor)) {}

    Executor& executor() { return *executor_; }
    // Held by a caller while it runs the executor (an executor serves one call at a time) and
    // while it uses plan_for() and the plan it returns.
    std::mutex& busy() { return busy_; }

    // executor().plan(problem, options), made again only when `problem` or `options` differ in
    // any field from the last call's: the cache cannot tell which fields an executor's plan()
    // reads (the CUDA engine's reads the dtypes, which choose its kernel and so its worker
    // count), and a step's layers repeat them all. Hold busy(); the reference is valid until the
    // next call. Throws what plan() throws (the last plan is then forgotten).
    const Plan& plan_for(const DecodeProblem& problem, const PlanOptions& options);

   private:
    std::unique_ptr<Executor> executor_;
    std::mutex busy_;
    std::optional<Plan> plan_;  // made for planned_problem_ and planned_options_
    DecodeProblem planned_problem_;
    PlanOptions planned_options_;
  };

  // Keeps at most `capacity` executors (>= 1; Error naming `capacity` otherwise).
  explicit ExecutorCache(std::size_t capacity);
  ~ExecutorCache();
  ExecutorCache(const ExecutorCache&) = delete;
  ExecutorCache& operator=(const ExecutorCache&) = delete;

  // The executor make_executor(name, options) made for this (name, options, stream), made now
  // when none is kept; it becomes the most recently used. `stream` keys device executors per
  // stream (the CUDA engine's workspace serves one stream); host executors take nullptr. A device
  // executor's options.device -1 is keyed as the calling thread's current device, so threads on
  // different GPUs get executors of their own. When a
  // new executor exceeds the capacity the least recently used one is forgotten: a caller still
  // holding it keeps it alive until it lets go. Thread-safe; two threads asking for a new key at
  // once may each make an executor, and one of them is dropped. Throws what make_executor()
  // throws (nothing is kept then).
  std::shared_ptr<Entry> get(std::string_view name, const ExecutorOptions& options = {},
                             void* stream = nullptr);

  std::size_t size() const;  // executors kept now
  std::size_t capacity() const { return capacity_; }

 private:
  struct Key {
    std::string name;
    ExecutorOptions options;
    void* stream = nullptr;
    bool operator==(const Key&) const = default;
  };
  struct Kept {
    Key key;
    std::shared_ptr<Entry> entry;
  };

  // The entry kept for `key`, moved to the front; null when none. Hold mutex_.
  std::shared_ptr<Entry> find_locked(const Key& key);

  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Kept> kept_;  // most recently used first
};

}  // namespace leanattn
