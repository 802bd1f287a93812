// ExecutorCache (leanattn/executor_cache.hpp): one executor per key (name, options, stream), the
// least recently used forgotten beyond the capacity, an entry held by a caller alive after it was
// forgotten, and lookups from several threads at once (also run under ThreadSanitizer). Executors
// taken from the cache are run on fresh random data against the fp64 reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/executor_cache.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

using Entry = ExecutorCache::Entry;

// Runs `entry`'s executor on a fresh random ragged case (an empty request included) with its
// outputs poisoned first, and returns whether the result meets the accuracy policy.
bool computes_attention(Entry& entry, std::uint64_t seed) {
  harness::HostCase c =
      harness::make_case(harness::test_problem({300, 0, 77}, 8, 2, 64, DType::f32), seed);
  const reference::Output ref = reference::naive_attention(c.problem, c.tensors());
  harness::poison_outputs(c);
  const std::lock_guard<std::mutex> busy(entry.busy());
  entry.executor().run(c.problem, entry.plan_for(c.problem, {.tile_tokens = 16}), c.tensors());
  return harness::check_accuracy(c, ref, true).ok();
}

TEST(ExecutorCache, TheSameKeyGivesTheSameExecutor) {
  ExecutorCache cache(4);
  const std::shared_ptr<Entry> a = cache.get("cpu", {.workers = 2});
  const std::shared_ptr<Entry> b = cache.get("cpu", {.workers = 2});
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a->executor(), &b->executor());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(a->executor().name(), "cpu");
  EXPECT_TRUE(computes_attention(*a, 1));
}

TEST(ExecutorCache, EveryOptionAndTheStreamMakeADifferentKey) {
  const std::string target = cpu::simd_targets().back();  // the last one: not "" (the best)
  const std::vector<ExecutorOptions> options = {
      {.workers = 2},
      {.workers = 3},
      {.workers = 2, .simd = target},
      {.workers = 2, .inline_kv_bytes = 4096},
      {.workers = 2, .device = 1},  // the CPU executor ignores the device; the key does not
  };
  ExecutorCache cache(16);
  std::vector<std::shared_ptr<Entry>> entries;
  for (const ExecutorOptions& o : options) entries.push_back(cache.get("cpu", o));
  int stream_tag = 0;
  entries.push_back(cache.get("cpu", {.workers = 2}, &stream_tag));  // another stream
  EXPECT_EQ(cache.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (std::size_t j = i + 1; j < entries.size(); ++j) {
      EXPECT_NE(&entries[i]->executor(), &entries[j]->executor()) << i << " vs " << j;
    }
  }
  // The options reached the executor: its worker count is the one asked for.
  const DecodeProblem p = harness::test_problem({10}, 4, 2, 64);
  EXPECT_EQ(entries[0]->executor().workers_for(p), 2);
  EXPECT_EQ(entries[1]->executor().workers_for(p), 3);
  // And asking again finds each one.
  for (std::size_t i = 0; i < options.size(); ++i) {
    EXPECT_EQ(cache.get("cpu", options[i]), entries[i]) << i;
  }
  EXPECT_EQ(cache.get("cpu", {.workers = 2}, &stream_tag), entries.back());
  EXPECT_TRUE(computes_attention(*entries[2], 2));
}

TEST(ExecutorCache, KeepsTheCapacityAndForgetsTheLeastRecentlyUsed) {
  ExecutorCache cache(3);
  std::weak_ptr<Entry> a = cache.get("cpu", {.workers = 1});
  std::weak_ptr<Entry> b = cache.get("cpu", {.workers = 2});
  std::weak_ptr<Entry> c = cache.get("cpu", {.workers = 3});
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.get("cpu", {.workers = 1}), a.lock());  // a is now the most recently used
  std::weak_ptr<Entry> d = cache.get("cpu", {.workers = 4});
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_TRUE(b.expired()) << "the least recently used (2 workers) was kept";
  EXPECT_FALSE(a.expired());
  EXPECT_FALSE(c.expired());
  EXPECT_FALSE(d.expired());
  // 2 workers again: a new executor; now 3 workers is the least recently used.
  const std::shared_ptr<Entry> b2 = cache.get("cpu", {.workers = 2});
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_TRUE(c.expired());
  EXPECT_EQ(cache.get("cpu", {.workers = 1}), a.lock());
  EXPECT_EQ(cache.get("cpu", {.workers = 4}), d.lock());
  EXPECT_TRUE(computes_attention(*b2, 3));
}

TEST(ExecutorCache, AnEntryHeldByACallerOutlivesItsEviction) {
  ExecutorCache cache(1);
  const std::shared_ptr<Entry> held = cache.get("cpu", {.workers = 3});
  const std::shared_ptr<Entry> other = cache.get("cpu", {.workers = 2});  // evicts `held`
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(computes_attention(*held, 4));  // still runs
  const std::shared_ptr<Entry> again = cache.get("cpu", {.workers = 3});
  EXPECT_NE(again, held) << "the evicted entry was found again";
  EXPECT_TRUE(computes_attention(*again, 5));
}

TEST(ExecutorCache, RefusesAZeroCapacityAndUnknownNames) {
  try {
    ExecutorCache cache(0);
    ADD_FAILURE() << "capacity 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "capacity");
  }
  ExecutorCache cache(2);
  try {
    cache.get("tpu");
    ADD_FAILURE() << "an unknown executor name accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "backend");
  }
  EXPECT_THROW(cache.get("cpu", {.workers = -1}), Error);
  EXPECT_EQ(cache.size(), 0u);  // nothing kept for a failed make_executor
}

// Threads look up executors of three worker counts in a cache of two (so lookups evict while
// other threads run), plan through the memo with two tile sizes in turn, and run into their own
// outputs; every output must be bitwise the one the same plan gives on a private engine.
TEST(ExecutorCache, ConcurrentLookupsAndRuns) {
  harness::HostCase c =
      harness::make_case(harness::test_problem({300, 0, 77}, 8, 2, 64, DType::f32), 6);
  const std::int32_t tiles[] = {16, 32};
  const std::int32_t worker_counts[] = {1, 2, 3};
  std::vector<std::vector<std::byte>> expected;  // [worker count][tile]
  for (std::int32_t w : worker_counts) {
    cpu::Engine engine({.workers = w});
    for (std::int32_t tile : tiles) {
      harness::poison_outputs(c);
      engine.run(c.problem, engine.plan(c.problem, {.tile_tokens = tile}), c.tensors());
      expected.push_back(c.out);
    }
  }
  const DecodeTensors shared = c.tensors();  // inputs only: every thread has its own outputs
  ExecutorCache cache(2);
  constexpr int kThreads = 4;
  constexpr int kRounds = 24;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> out(c.out.size());
      std::vector<float> lse(c.lse.size());
      DecodeTensors mine = shared;
      mine.out = out.data();
      mine.lse = lse.data();
      for (int r = 0; r < kRounds; ++r) {
        const int wi = (t + r) % 3, ti = r % 2;
        std::memset(out.data(), 0xff, out.size());  // NaN bit patterns
        const std::shared_ptr<Entry> entry = cache.get("cpu", {.workers = worker_counts[wi]});
        {
          const std::lock_guard<std::mutex> busy(entry->busy());
          const Plan& plan = entry->plan_for(c.problem, {.tile_tokens = tiles[ti]});
          entry->executor().run(c.problem, plan, mine);
        }
        if (out != expected[static_cast<std::size_t>(wi * 2 + ti)]) ++mismatches[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_LE(cache.size(), 2u);
}

}  // namespace
}  // namespace leanattn
