// A run of a reused plan allocates nothing: global operator new is replaced by a counting one
// (this executable only), and Engine::run is called with counting on, after a warm-up run, for
// every strategy, on the thread pool and on the calling thread (inline_kv_bytes).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// GCC (-O2 with sanitizers) inlines these into GoogleTest's `new TestClass` and then reports the
// replaced operator delete's free() as mismatched with operator new: both are ours, malloc/free.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace leanattn {
namespace {

TEST(NoAllocation, ReusedPlanRunsAllocateNothing) {
  const DecodeProblem p = harness::test_problem({3000, 17, 900}, 8, 2, 64, DType::f32);
  const std::size_t batch = p.seq_lens.size();
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  auto random = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(gen);
    return v;
  };
  const auto q = random(batch * 8 * 64);
  const auto k = random(batch * 3000 * 2 * 64);
  const auto v = random(batch * 3000 * 2 * 64);
  std::vector<float> out(batch * 8 * 64), lse(batch * 8);
  const DecodeTensors t =
      dense_tensors(p, q.data(), k.data(), v.data(), nullptr, out.data(), lse.data());
  for (std::int64_t inline_bytes : {std::int64_t{0}, std::int64_t{1} << 40}) {
    cpu::Engine engine({.workers = 2, .inline_kv_bytes = inline_bytes});
    EXPECT_TRUE(engine.worker_seconds().empty());
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      const Plan plan = engine.plan(p, {.strategy = s});
      engine.run(p, plan, t);  // warm-up: workspace, scratch, plan-check buffers
      allocations = 0;
      counting = true;
      for (int i = 0; i < 10; ++i) engine.run(p, plan, t);
      counting = false;
      EXPECT_EQ(allocations.load(), 0) << strategy_name(s) << (inline_bytes ? " inline" : " pool");
      // Each plan worker's time (Engine::worker_seconds), timed without allocating either.
      const auto seconds = engine.worker_seconds();
      ASSERT_EQ(seconds.size(), static_cast<std::size_t>(plan.workers)) << strategy_name(s);
      double sum = 0.0;
      for (const double x : seconds) {
        EXPECT_GE(x, 0.0) << strategy_name(s);
        sum += x;
      }
      EXPECT_GT(sum, 0.0) << strategy_name(s);
    }
  }
}

}  // namespace
}  // namespace leanattn
