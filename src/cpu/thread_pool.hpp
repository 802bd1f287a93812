// ThreadPool: the CPU engine's persistent workers. `size()` threads in all: size() - 1 background
// threads plus the calling thread, which runs share 0. run() hands every thread the same job and
// returns when all have finished it. Threads never wait on each other inside a job, so any thread
// count works, including more threads than cores. Used by cpu::Engine only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace leanattn::cpu {

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
  void run(const std::function<void(std::int32_t)>& job);

 private:
  void worker_loop(std::int32_t thread);

  std::vector<std::thread> threads_;
  const std::function<void(std::int32_t)>* job_ = nullptr;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::int32_t> pending_{0};
  std::atomic<bool> stop_{false};
  bool spin_;
};

}  // namespace leanattn::cpu
