// The CUDA kernel's source on the CPU emulator (tools/cuda_emulator) as a kernel backend of
// `leanattn check --backend cuda-emulated`: the emulator's executor (emulated_executor.hpp), one
// per worker count, run on the case's own host buffers.
#include <map>

#include "checks/kernel_checks.hpp"
#include "emulator/emulated_executor.hpp"

namespace leanattn::checks {

namespace {

class EmulatedKernelBackend final : public KernelBackend {
 public:
  explicit EmulatedKernelBackend(const KernelBackendOptions& o) : options_(o) {}
  std::string_view name() const override { return "cuda-emulated"; }
  void run(harness::HostCase& c, const PlanOptions& options, std::int32_t drawn_workers) override {
    const std::int32_t workers = options_.workers > 0 ? options_.workers : drawn_workers;
    std::unique_ptr<Executor>& e = executors_[workers];
    if (!e) {
      emulator::RunOptions o;
      o.seed = options_.schedule_seed;
      e = emulator::make_emulated_executor(workers, o);
    }
    e->run(c.problem, e->plan(c.problem, options), c.tensors());
  }

 private:
  KernelBackendOptions options_;
  std::map<std::int32_t, std::unique_ptr<Executor>> executors_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_emulated_kernel_backend(const KernelBackendOptions& options) {
  return std::make_unique<EmulatedKernelBackend>(options);
}

}  // namespace leanattn::checks
