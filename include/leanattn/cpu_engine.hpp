// The CPU engine: runs any Plan on persistent threads (the CPU's cores are its "SMs") with a
// SIMD inner loop chosen at run time (AVX-512, AVX2, SSE4, or a portable fallback).
//
//   leanattn::cpu::Engine engine({.workers = 8});
//   leanattn::Plan plan = engine.plan(problem, {.strategy = leanattn::Strategy::lean});
//   engine.run(problem, plan, leanattn::dense_tensors(problem, q, k, v, nullptr, out, lse));
//
// Each worker runs its segments; a split pair's pieces go to workspace slots and the last worker
// to finish a piece merges all of them in the plan's fixed order, so no worker ever waits for
// another (any thread count is deadlock-free) and the output is bitwise identical from run to
// run. An Engine is used by one calling thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "leanattn/hardware.hpp"
#include "leanattn/parallel_for.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cpu {

struct EngineOptions {
  std::int32_t workers = 0;  // persistent threads; 0 = one per available core
  std::string simd{};        // SIMD target ("AVX3", "AVX2", "SSE4", "EMU128"); "" = best here
  bool pin_threads = false;  // bind thread i to core i (benchmarks)
  // Problems whose K and V bytes times q_len (the query tokens that read them: a prefill chunk
  // at small depth is not a small problem) are at most this many run every plan worker in turn
  // on the calling thread: waking the pool costs more than it saves (microseconds per call, more
  // on a busy machine). Outputs are bitwise the same either way. 0 = always use the pool.
  std::int64_t inline_kv_bytes = 0;
  // Set: every run's `workers` threads are the caller's (ParallelFor), the engine starts none
  // and pin_threads does not apply. Unset: the engine's own pool of workers - 1 threads.
  ParallelFor parallel{};
};

class Engine {
 public:
  explicit Engine(const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::int32_t workers() const;
  const std::string& simd_target() const;
  Hardware hardware() const { return {workers()}; }

  // A plan for this engine's worker count (lean with LineOrder::automatic gets token_major).
  Plan plan(const DecodeProblem& problem, const PlanOptions& options = {}) const;

  // Runs `plan` (made for `problem`, any worker count: plan worker w runs on thread w % threads)
  // with the engine's own workspace. Validates problem, tensors and plan first (throws Error).
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors);

  // Same with a caller-owned workspace of at least workspace_layout(plan).bytes, 64-byte aligned.
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           std::span<std::byte> workspace);

  // Seconds each plan worker spent on its segments in the last run ([plan.workers]; empty before
  // the first): how evenly a plan loaded the workers, for benchmarks. Valid until the next run.
  std::span<const double> worker_seconds() const;

  // plan() then run().
  void decode(const DecodeProblem& problem, const DecodeTensors& tensors,
              const PlanOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The plan options cpu::Engine::plan() uses for `options`: resolve_plan_options(options,
// PlanTarget::cpu) (LineOrder::automatic becomes token_major for every strategy, split's
// SplitRule::automatic becomes even_workers; docs/cpu-engine.md, heuristics.hpp).
PlanOptions cpu_plan_options(const PlanOptions& options);

// SIMD targets compiled into the engine that this CPU supports, best first.
std::vector<std::string> simd_targets();

}  // namespace leanattn::cpu
