// ThreadPool (see thread_pool.hpp): a generation counter starts a job, a pending counter ends
// it; both use C++20 atomic wait/notify (futex on Linux) after an optional short spin.
#include "thread_pool.hpp"

#include <sched.h>

#include "leanattn/hardware.hpp"

namespace leanattn::cpu {

namespace {

constexpr int kSpinIterations = 20000;

void pin_to_cpu(std::int32_t thread) {
  const auto cores = static_cast<unsigned>(default_workers());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(static_cast<unsigned>(thread) % cores), &set);
  sched_setaffinity(0, sizeof(set), &set);  // best effort: ignore failure (containers)
}

template <class T, class Pred>
void spin_then_wait(const std::atomic<T>& a, T seen, bool spin, Pred done) {
  if (spin) {
    for (int i = 0; i < kSpinIterations; ++i) {
      if (done(a.load(std::memory_order_acquire))) return;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  }
  for (T v = a.load(std::memory_order_acquire); !done(v); v = a.load(std::memory_order_acquire)) {
    a.wait(v, std::memory_order_acquire);
  }
  (void)seen;
}

}  // namespace

ThreadPool::ThreadPool(std::int32_t threads, bool spin, bool pin) : spin_(spin) {
  if (pin) pin_to_cpu(0);
  for (std::int32_t t = 1; t < threads; ++t) {
    threads_.emplace_back([this, t, pin] {
      if (pin) pin_to_cpu(t);
      worker_loop(t);
    });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop(std::int32_t thread) {
  std::uint64_t seen = 0;
  for (;;) {
    spin_then_wait(generation_, seen, spin_, [&](std::uint64_t g) { return g != seen; });
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    (*job_)(thread);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(JobRef job) {
  if (threads_.empty()) {
    job(0);
    return;
  }
  job_ = &job;
  pending_.store(static_cast<std::int32_t>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes job_ and pending_
  generation_.notify_all();
  job(0);
  spin_then_wait(pending_, 0, spin_, [](std::int32_t p) { return p == 0; });
}

}  // namespace leanattn::cpu
