// The CPU engine behind the executor seam (leanattn/executor.hpp): host memory, every problem the
// planner accepts; its DecodeStep reads the lengths when it runs (the host is its device) and
// plans them then.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "executors/factories.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"

namespace leanattn::executors {

namespace {

// A step of fixed bounds on the CPU engine: host planning plans in plan(), device planning in
// run() from the lengths (and a mixed shape's query_start_loc) it is given (host memory, read then:
// bad ones throw at once, so check() has nothing to report). Each plan is the engine's for the
// step's problem with `options`.
class CpuStep final : public DecodeStep {
 public:
  CpuStep(cpu::Engine& engine, const DecodeProblem& shape, const PlanOptions& options,
          StepPlanning planning)
      : engine_(engine), shape_(shape), options_(options), planning_(planning) {
    // The shape and the options checked now (Error naming the field), by planning it once.
    tile_tokens_ = engine_.plan(shape_, options_).tile_tokens;
  }

  StepPlanning planning() const override { return planning_; }
  std::int32_t workers() const override { return engine_.workers(); }
  std::int32_t tile_tokens() const override { return tile_tokens_; }

  void plan(std::span<const std::int32_t> seq_lens, std::span<const std::int32_t> query_start_loc,
            void*) override {
    if (planning_ != StepPlanning::host) refuse_plan_on_device_planned_step();
    // Refused: the last plan stays, as on a GPU.
    set_plan(step_problem(shape_, seq_lens, query_start_loc));
  }

  void run(const std::int32_t* seq_lens, const std::int32_t* query_start_loc,
           const DecodeTensors& tensors, void*) override {
    if (planning_ == StepPlanning::device) {
      require(seq_lens != nullptr, "seq_lens",
              [] { return "must be given to a device-planned step's run() ([capacity] int32)"; });
      require_step_query_start_loc(shape_, query_start_loc != nullptr);
      const std::span lens(seq_lens, shape_.seq_lens.size());
      std::span<const std::int32_t> loc;
      if (query_start_loc != nullptr) loc = std::span(query_start_loc, lens.size() + 1);
      // A model's layers run one step's lengths in turn: plan them once (as plan_for() does).
      if (!plan_ || !std::ranges::equal(lens, step_.seq_lens) ||
          !std::ranges::equal(loc, step_.query_start_loc)) {
        set_plan(step_problem(shape_, lens, loc));
      }
    } else if (seq_lens != nullptr || query_start_loc != nullptr) {
      refuse_lengths_on_host_planned_run(seq_lens != nullptr ? "seq_lens" : "query_start_loc");
    }
    if (!plan_) return;  // host planning with nothing planned yet: nothing written
    engine_.run(step_, *plan_, tensors);
  }

  void check(void*) override {}

 private:
  cpu::Engine& engine_;
  DecodeProblem shape_;
  PlanOptions options_;
  StepPlanning planning_;
  std::int32_t tile_tokens_ = 0;
  DecodeProblem step_;        // the shape with the lengths last planned
  std::optional<Plan> plan_;  // made for step_

  // Plans `step`; both kept only when planning succeeds.
  void set_plan(DecodeProblem step) {
    Plan plan = engine_.plan(step, options_);
    step_ = std::move(step);
    plan_ = std::move(plan);
  }
};

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(const ExecutorOptions& o)
      : engine_({.workers = o.workers,
                 .simd = o.simd,
                 .pin_threads = o.pin_threads,
                 .inline_kv_bytes = o.inline_kv_bytes,
                 .parallel = o.parallel}) {}

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
  std::unique_ptr<DecodeStep> make_step(const DecodeProblem& shape, const PlanOptions& options,
                                        StepPlanning planning) override {
    return std::make_unique<CpuStep>(engine_, shape, options, planning);
  }

 private:
  cpu::Engine engine_;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const ExecutorOptions& options) {
  return std::make_unique<CpuExecutor>(options);
}

}  // namespace leanattn::executors
