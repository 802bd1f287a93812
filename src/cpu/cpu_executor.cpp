// The CPU engine behind the executor seam (leanattn/executor.hpp): host memory, every problem the
// planner accepts.
#include <memory>

#include "executors/factories.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn::executors {

namespace {

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(const ExecutorOptions& o)
      : engine_({.workers = o.workers,
                 .simd = o.simd,
                 .pin_threads = o.pin_threads,
                 .inline_kv_bytes = o.inline_kv_bytes}) {}

  std::string_view name() const override { return "cpu"; }
  Memory memory() const override { return Memory::host; }
  std::string why_not(const DecodeProblem&) const override { return ""; }
  std::int32_t workers_for(const DecodeProblem&) const override { return engine_.workers(); }
  Plan plan(const DecodeProblem& problem, const PlanOptions& options) const override {
    return engine_.plan(problem, options);
  }
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void*) override {
    engine_.run(problem, plan, tensors);
  }

 private:
  cpu::Engine engine_;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const ExecutorOptions& options) {
  return std::make_unique<CpuExecutor>(options);
}

}  // namespace leanattn::executors
