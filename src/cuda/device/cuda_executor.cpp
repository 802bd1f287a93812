// The CUDA engine behind the executor seam (leanattn/executor.hpp): device memory, launches on
// the caller's stream, the problems a compiled kernel configuration covers (Engine::why_not).
#include <memory>

#include "executors/factories.hpp"
#include "leanattn/cuda_engine.hpp"

namespace leanattn::executors {

namespace {

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
