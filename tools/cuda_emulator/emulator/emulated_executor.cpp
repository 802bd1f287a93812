// make_emulated_executor() (see emulated_executor.hpp).
#include "emulator/emulated_executor.hpp"

#include <span>

#include "cuda/device/fixed_plan.hpp"
#include "emulator/emulated_capture.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::emulator {

namespace {

// The seam's DecodeStep over an EmulatedCapturedStep, as the CUDA engine's over its two steps:
// device planning copies the lengths into the step's "device" array and replays planner and
// decode (bad lengths: the planner refuses, check() reports); host planning plans on the host
// into the plan region and replays the decode alone.
class EmulatedStep final : public DecodeStep {
 public:
  EmulatedStep(const DecodeProblem& shape, std::int32_t workers, const PlanOptions& options,
               StepPlanning planning, const RunOptions& run_options)
      : tile_tokens_(cuda::fixed_step_tile(
            shape, options,
            planning == StepPlanning::device ? "the device planner" : "a host-planned step")),
        step_(shape, workers, tile_tokens_),
        workers_(workers),
        planning_(planning),
        options_(run_options) {}

  StepPlanning planning() const override { return planning_; }
  std::int32_t workers() const override { return workers_; }
  std::int32_t tile_tokens() const override { return tile_tokens_; }

  // Mixed shapes are refused when the step is made (fixed_step_tile), as on the CUDA engine.
  void plan(std::span<const std::int32_t> seq_lens, std::span<const std::int32_t> query_start_loc,
            void*) override {
    if (planning_ != StepPlanning::host) refuse_plan_on_device_planned_step();
    require_step_query_start_loc(DecodeProblem{}, !query_start_loc.empty());
    step_.plan_on_host(seq_lens);
  }

  void run(const std::int32_t* seq_lens, const std::int32_t* query_start_loc,
           const DecodeTensors& tensors, void*) override {
    require_step_query_start_loc(DecodeProblem{}, query_start_loc != nullptr);
    if (planning_ == StepPlanning::host) {
      if (seq_lens != nullptr) refuse_lengths_on_host_planned_run();
      return step_.replay_decode(tensors, options_);
    }
    require(seq_lens != nullptr, "seq_lens", [] { return "must be a device pointer, not null"; });
    const std::span<std::int32_t> lens = step_.seq_lens();
    std::copy(seq_lens, seq_lens + lens.size(), lens.begin());
    step_.replay(tensors, options_);
  }

  void check(void*) override {
    if (planning_ == StepPlanning::device) step_.check();
  }

 private:
  std::int32_t tile_tokens_;
  EmulatedCapturedStep step_;
  std::int32_t workers_;
  StepPlanning planning_;
  RunOptions options_;
};

class EmulatedExecutor final : public Executor {
 public:
  EmulatedExecutor(std::int32_t workers, const RunOptions& options)
      : workers_(workers), options_(options) {
    validate_workers(workers);
  }

  std::string_view name() const override { return "cuda-emulated"; }
  Memory memory() const override { return Memory::host; }
  std::string why_not(const DecodeProblem& problem) const override {
    return why_unsupported(problem);
  }
  std::int32_t workers_for(const DecodeProblem&) const override { return workers_; }
  Plan plan(const DecodeProblem& problem, const PlanOptions& options) const override {
    return EmulatedDevice::plan(problem, workers_, options);
  }
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void*) override {
    device_.run(problem, plan, tensors, options_);
  }
  std::unique_ptr<DecodeStep> make_step(const DecodeProblem& shape, const PlanOptions& options,
                                        StepPlanning planning) override {
    return std::make_unique<EmulatedStep>(shape, workers_, options, planning, options_);
  }

 private:
  std::int32_t workers_;
  RunOptions options_;
  EmulatedDevice device_;
};

}  // namespace

std::unique_ptr<Executor> make_emulated_executor(std::int32_t workers, const RunOptions& options) {
  return std::make_unique<EmulatedExecutor>(workers, options);
}

}  // namespace leanattn::emulator
