// The executor seam: one interface over the engines that run plans (the CPU engine, the CUDA
// engine when it is built), so that callers that serve several (the Python module, the command
// line's bench and check) choose one by name and run it without knowing which it is.
//
//   std::unique_ptr<leanattn::Executor> e = leanattn::make_executor("cpu", {.workers = 4});
//   leanattn::Plan plan = e->plan(problem, {.strategy = leanattn::Strategy::lean});
//   e->run(problem, plan, tensors);  // tensors in e->memory()
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leanattn/decode_step.hpp"
#include "leanattn/parallel_for.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn {

// Where the tensors an executor runs on live.
enum class Memory : std::uint8_t { host, device };

struct ExecutorOptions {
  // Persistent workers plans are made for; 0: the executor's default (CPU: default_workers();
  // CUDA: the kernel's occupancy). 0..kMaxWorkers (validate_workers).
  std::int32_t workers = 0;
  std::int32_t device = -1;          // CUDA device ordinal; -1: the calling thread's current device
  std::string simd{};                // CPU SIMD target; "" = the best this CPU runs
  bool pin_threads = false;          // CPU: bind thread i to core i (benchmarks)
  std::int64_t inline_kv_bytes = 0;  // CPU: see cpu::EngineOptions
  cpu::ParallelFor parallel{};  // CPU: the caller's threads (cpu::EngineOptions); unset: a pool

  bool operator==(const ExecutorOptions&) const = default;  // ExecutorCache's key
};

class Executor {
 public:
  virtual ~Executor() = default;

  virtual std::string_view name() const = 0;  // "cpu", "cuda", ...
  virtual Memory memory() const = 0;

  // "" when this executor runs `problem`; otherwise what it lacks, naming the setting (for
  // example a variant the CUDA kernel does not compute yet).
  virtual std::string why_not(const DecodeProblem& problem) const = 0;

  // Workers a plan for `problem` gets (ExecutorOptions::workers, or the executor's default).
  virtual std::int32_t workers_for(const DecodeProblem& problem) const = 0;

  // A plan with this executor's preferred line order and split rule for `automatic`
  // (executor_plan_options).
  virtual Plan plan(const DecodeProblem& problem, const PlanOptions& options = {}) const = 0;

  // Runs `plan` (made for `problem`, any worker count) on tensors in memory(). Device
  // executors launch asynchronously on `stream` (a cudaStream_t; nullptr: the default stream);
  // host executors ignore it and return when the output is written. Throws Error for bad input.
  virtual void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                   void* stream = nullptr) = 0;

  // A step of fixed bounds for `shape` (its batch the capacity, its longest request the bound;
  // leanattn/decode_step.hpp) whose plan is made each step: on the host by plan(), or from
  // lengths in memory() by run(). options: the plans' strategy and tile (the CUDA engine's
  // steps: lean, head-major only). The step must not outlive this executor. Throws Error for a
  // shape or options this executor cannot step (why_not(shape) names the setting).
  virtual std::unique_ptr<DecodeStep> make_step(const DecodeProblem& shape,
                                                const PlanOptions& options,
                                                StepPlanning planning) = 0;
};

// The executors built into this library, "cpu" first ("cuda" when the CUDA engine is built).
std::vector<std::string> executor_names();

// A new executor by name. Throws Error naming `backend` for a name this build lacks, and
// cuda::CudaError when the CUDA device cannot be used.
std::unique_ptr<Executor> make_executor(std::string_view name, const ExecutorOptions& options = {});

}  // namespace leanattn
