// The CUDA engine behind the executor seam (leanattn/executor.hpp): device memory, launches on
// the caller's stream, the problems a compiled kernel configuration covers (Engine::why_not);
// its DecodeStep is a DevicePlannedStep or a HostPlannedStep.
#include <memory>
#include <span>

#include "executors/factories.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/decode_step.hpp"

namespace leanattn::executors {

namespace {

// The seam's DecodeStep over the engine's two captured steps.
class CudaStep final : public DecodeStep {
 public:
  CudaStep(cuda::Engine& engine, const DecodeProblem& shape, const PlanOptions& options,
           StepPlanning planning) {
    if (planning == StepPlanning::device) {
      device_ = std::make_unique<cuda::DevicePlannedStep>(engine, shape, options);
    } else {
      host_ = std::make_unique<cuda::HostPlannedStep>(engine, shape, options);
    }
  }

  StepPlanning planning() const override {
    return device_ ? StepPlanning::device : StepPlanning::host;
  }
  std::int32_t workers() const override { return device_ ? device_->workers() : host_->workers(); }
  std::int32_t tile_tokens() const override {
    return device_ ? device_->tile_tokens() : host_->tile_tokens();
  }

  // Mixed shapes are refused when the step is made (fixed_step_tile: require_one_q_len), so a
  // query_start_loc given here is refused by name as one for a step of one q_len.
  void plan(std::span<const std::int32_t> seq_lens, std::span<const std::int32_t> query_start_loc,
            void* stream) override {
    if (host_ == nullptr) refuse_plan_on_device_planned_step();
    require_step_query_start_loc(DecodeProblem{}, !query_start_loc.empty());
    host_->plan(seq_lens, stream);
  }

  void run(const std::int32_t* seq_lens, const std::int32_t* query_start_loc,
           const DecodeTensors& tensors, void* stream) override {
    require_step_query_start_loc(DecodeProblem{}, query_start_loc != nullptr);
    if (device_) return device_->run(seq_lens, tensors, stream);
    if (seq_lens != nullptr) refuse_lengths_on_host_planned_run();
    host_->run(tensors, stream);
  }

  void check(void* stream) override {
    if (device_) device_->check(stream);
  }

 private:
  std::unique_ptr<cuda::DevicePlannedStep> device_;
  std::unique_ptr<cuda::HostPlannedStep> host_;
};

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(const ExecutorOptions& o)
      : engine_({.device = o.device, .workers = o.workers}) {}

  std::string_view name() const override { return "cuda"; }
  Memory memory() const override { return Memory::device; }
  std::string why_not(const DecodeProblem& problem) const override {
    return engine_.why_not(problem);
  }
  std::int32_t workers_for(const DecodeProblem& problem) const override {
    return engine_.workers_for(problem);
  }
  Plan plan(const DecodeProblem& problem, const PlanOptions& options) const override {
    return engine_.plan(problem, options);
  }
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void* stream) override {
    engine_.run(problem, plan, tensors, stream);
  }
  std::unique_ptr<DecodeStep> make_step(const DecodeProblem& shape, const PlanOptions& options,
                                        StepPlanning planning) override {
    return std::make_unique<CudaStep>(engine_, shape, options, planning);
  }

 private:
  cuda::Engine engine_;
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const ExecutorOptions& options) {
  return std::make_unique<CudaExecutor>(options);
}

std::int32_t cuda_current_device() {
  return cuda::current_device();
}

}  // namespace leanattn::executors
