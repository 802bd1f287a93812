// Determinism (one plan, bitwise identical runs) and batch invariance (a request's output does
// not depend on its batch or the worker count in batch-invariant mode), on random cases; plus a
// direct test that the plain lean mode is NOT batch invariant in general, so the invariance check
// can fail.
#include <gtest/gtest.h>

#include <cstring>

#include "checks/random_checks.hpp"
#include "harness/host_case.hpp"
#include "leanattn/executor_cache.hpp"

namespace leanattn {
namespace {

TEST(Reproducibility, RandomCasesAreDeterministicAndBatchInvariant) {
  ExecutorCache executors(checks::kKeptExecutors);
  for (std::int64_t i = 0; i < 40; ++i) {
    const checks::CaseReport r = checks::reproducibility_case(7, i, executors);
    for (const auto& o : r.outcomes)
      EXPECT_TRUE(o.ok) << o.what << " on " << r.problem << ": " << o.detail;
  }
}

TEST(Reproducibility, RandomStrategiesMatchTheReference) {
  ExecutorCache executors(checks::kKeptExecutors);
  harness::RandomLimits lim;
  lim.any_head_dim = true;
  for (std::int64_t i = 0; i < 40; ++i) {
    const checks::CaseReport r = checks::random_strategies_case(11, i, lim, executors);
    for (const auto& o : r.outcomes)
      EXPECT_TRUE(o.ok) << o.what << " on " << r.problem << ": " << o.detail;
  }
}

// Without batch invariance, the split points of a request move with the worker count, so its
// bits may change: this is why the mode exists (and shows the check above can fail).
TEST(Reproducibility, PlainLeanDependsOnTheWorkerCount) {
  DecodeProblem p;
  p.q_heads = 8;
  p.kv_heads = 1;
  p.head_dim = 128;
  p.seq_lens = {5000};
  p.q_dtype = p.kv_dtype = DType::f32;
  harness::HostCase c = harness::make_case(p, 3);
  ExecutorCache executors(checks::kKeptExecutors);
  bool any_difference = false;
  executors.get("cpu", {.workers = 1})
      ->executor()
      .run(c.problem, make_plan(c.problem, {1}, {.tile_tokens = 16}), c.tensors());
  const auto one = c.out;
  for (std::int32_t w : {3, 7, 13}) {
    executors.get("cpu", {.workers = w})
        ->executor()
        .run(c.problem, make_plan(c.problem, {w}, {.tile_tokens = 16}), c.tensors());
    any_difference = any_difference || c.out != one;
  }
  EXPECT_TRUE(any_difference);
}

}  // namespace
}  // namespace leanattn
