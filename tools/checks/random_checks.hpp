// Randomised checks shared by `leanattn check` and the tests: one random problem run with every
// strategy against the fp64 reference, and the two reproducibility properties (determinism of a
// plan; batch invariance of the batch-invariant mode). Each check is identified by (seed, index)
// so that a failure can be replayed with `leanattn check --seed S --only I`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/random_problem.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/executor_cache.hpp"

namespace leanattn::checks {

// How many executors the checks' caches keep (ExecutorCache): a case runs on at most three
// worker counts.
inline constexpr std::size_t kKeptExecutors = 8;

// The CPU executor options of case `index` under `leanattn check --simd simd`: that target ("" the
// best this CPU runs), or with "all" every target this CPU runs, in turn over blocks of 10 cases.
// Workers are left 0: each check sets its own count.
ExecutorOptions cpu_options_for_case(const std::string& simd, std::int64_t index);

struct Outcome {
  std::string what;  // e.g. "lean/token_major" or "batch invariance"
  bool ok = false;
  std::string detail;  // error and tolerance, or the first mismatch
};

struct CaseReport {
  std::string problem;  // one-line description of the drawn problem
  std::vector<Outcome> outcomes;
};

// One-line description of a drawn case, and of an accuracy verdict, for failure messages.
std::string describe(const DecodeProblem& problem, std::int32_t workers, std::int32_t tile);
std::string accuracy_text(const harness::Accuracy& accuracy);

// The random case `index` of `seed` (the same draw every executor's check uses).
harness::RandomCase draw_case(std::uint64_t seed, std::int64_t index,
                              const harness::RandomLimits& limits);

// Draws case `index` of `seed` and runs lean (both line orders), batch-invariant lean (chunk
// size drawn from 1 to 16 tiles), split (heuristic and a drawn split count) and head on it; every
// output is compared with the fp64 reference (accuracy policy), NaN-poisoned before each run.
// Runs on the "cpu" executors of `executors` with `cpu`'s options and the drawn worker count.
CaseReport random_strategies_case(std::uint64_t seed, std::int64_t index,
                                  const harness::RandomLimits& limits, ExecutorCache& executors,
                                  const ExecutorOptions& cpu = {});

// Determinism: the same plan run twice gives bitwise identical outputs. Batch invariance: with
// batch_invariant plans, one request's output is bitwise identical whatever the other requests
// and the worker count. Executors as for random_strategies_case.
CaseReport reproducibility_case(std::uint64_t seed, std::int64_t index, ExecutorCache& executors,
                                const ExecutorOptions& cpu = {});

}  // namespace leanattn::checks
