// make_emulated_executor() (see emulated_executor.hpp).
#include "emulator/emulated_executor.hpp"

#include "leanattn/hardware.hpp"

namespace leanattn::emulator {

namespace {

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
