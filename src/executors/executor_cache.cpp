// ExecutorCache (leanattn/executor_cache.hpp): a bounded LRU of executors made by the registry,
// each with the mutex its callers hold and the memo of its last plan.
#include "leanattn/executor_cache.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "executors/factories.hpp"
#include "leanattn/error.hpp"

namespace leanattn {

const Plan& ExecutorCache::Entry::plan_for(const DecodeProblem& problem,
                                           const PlanOptions& options) {
  if (plan_ && problem == planned_problem_ && options == planned_options_) return *plan_;
  plan_.reset();                // a failed plan() or copy leaves nothing behind
  DecodeProblem key = problem;  // copied before the plan is kept: a throwing copy keeps no plan
  Plan made = executor_->plan(problem, options);
  planned_problem_ = std::move(key);
  planned_options_ = options;
  plan_ = std::move(made);
  return *plan_;
}

ExecutorCache::ExecutorCache(std::size_t capacity) : capacity_(capacity) {
  require(capacity >= 1, "capacity",
          [&] { return "must be >= 1 (got " + std::to_string(capacity) + ")"; });
}

ExecutorCache::~ExecutorCache() = default;

std::shared_ptr<ExecutorCache::Entry> ExecutorCache::find_locked(const Key& key) {
  const auto it =
      std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.key == key; });
  if (it == kept_.end()) return nullptr;
  kept_.splice(kept_.begin(), kept_, it);
  return kept_.front().entry;
}

std::shared_ptr<ExecutorCache::Entry> ExecutorCache::get(std::string_view name,
                                                         const ExecutorOptions& options,
                                                         void* stream) {
  // Device -1 ("the current device") keyed as the device it means now, so that threads on
  // different devices get their own executors.
  Key key{std::string(name), executors::resolved_options(name, options), stream};
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<Entry> kept = find_locked(key)) return kept;
  }
  // Made without the lock: a CPU engine starts threads, a CUDA engine initialises its device.
  auto made = std::make_shared<Entry>(make_executor(name, key.options));
  std::shared_ptr<Entry> evicted;  // destroyed after the lock is released (threads join)
  const std::lock_guard<std::mutex> lock(mutex_);
  if (std::shared_ptr<Entry> kept = find_locked(key)) {
    evicted = std::move(made);  // another thread made one first: keep its
    return kept;
  }
  kept_.push_front({std::move(key), made});
  if (kept_.size() > capacity_) {
    evicted = std::move(kept_.back().entry);
    kept_.pop_back();
  }
  return made;
}

std::size_t ExecutorCache::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return kept_.size();
}

}  // namespace leanattn
