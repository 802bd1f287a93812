// ThreadPool: the CPU engine's persistent workers. `size()` threads in all: size() - 1 background
// threads plus the calling thread, which runs share 0. run() hands every thread the same job and
// returns when all have finished it. Threads never wait on each other inside a job, so any thread
// count works, including more threads than cores. Used by cpu::Engine only.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace leanattn::cpu {

// A non-owning reference to a callable void(std::int32_t): unlike std::function it never
// allocates, so a run of a reused plan allocates nothing (docs/integration.md). The callable
// must outlive the reference: a temporary passed to run() does.
class JobRef {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, JobRef>)
      JobRef(F&& f)  // NOLINT(google-explicit-constructor): passed like std::function
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, std::int32_t t) { (*static_cast<std::remove_reference_t<F>*>(o))(t); }) {}
  void operator()(std::int32_t thread) const { call_(object_, thread); }

 private:
  void* object_;
  void (*call_)(void*, std::int32_t);
};

class ThreadPool {
 public:
  // threads >= 1. spin: poll briefly before sleeping (lower latency for short jobs; only worth it
  // when every thread has a core). pin: bind thread i to CPU i % cores.
  ThreadPool(std::int32_t threads, bool spin, bool pin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::int32_t size() const { return static_cast<std::int32_t>(threads_.size()) + 1; }

  // Runs job(thread) for thread = 0 .. size() - 1, thread 0 on the caller. The job must not throw.
  void run(JobRef job);

 private:
  void worker_loop(std::int32_t thread);

  std::vector<std::thread> threads_;
  const JobRef* job_ = nullptr;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::int32_t> pending_{0};
  std::atomic<bool> stop_{false};
  bool spin_;
};

}  // namespace leanattn::cpu
