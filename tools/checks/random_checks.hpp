// Randomised checks shared by `leanattn check` and the tests: one random problem run with every
// strategy against the fp64 reference, and the two reproducibility properties (determinism of a
// plan; batch invariance of the batch-invariant mode). Each check is identified by (seed, index)
// so that a failure can be replayed with `leanattn check --seed S --only I`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/random_problem.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn::checks {

// CPU engines by worker count (threads are created once per count), for one SIMD target: `simd`
// ("" the best this CPU runs), or with "all" every target this CPU runs, chosen per case by
// select().
class EnginePool {
 public:
  explicit EnginePool(std::string simd = "");
  cpu::Engine& get(std::int32_t workers);
  // With "all": the target of case `index` (a rotation over blocks of 10 cases), whose engines
  // get() returns from now on. Otherwise the one target. Returns its name ("" for the best).
  const std::string& select(std::int64_t index);

 private:
  std::vector<std::string> targets_;  // more than one only with "all"
  std::string simd_;
  std::map<std::int32_t, std::unique_ptr<cpu::Engine>> engines_;
};

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
CaseReport random_strategies_case(std::uint64_t seed, std::int64_t index,
                                  const harness::RandomLimits& limits, EnginePool& engines);

// Determinism: the same plan run twice gives bitwise identical outputs. Batch invariance: with
// batch_invariant plans, one request's output is bitwise identical whatever the other requests
// and the worker count.
CaseReport reproducibility_case(std::uint64_t seed, std::int64_t index, EnginePool& engines);

}  // namespace leanattn::checks
