// The CUDA kernel's source on the CPU emulator (tools/cuda_emulator) as a kernel backend of
// `leanattn check --backend cuda-emulated`: host memory, so it runs on the case's own buffers.
#include "checks/kernel_checks.hpp"
#include "emulator/emulated_device.hpp"

namespace leanattn::checks {

namespace {

class EmulatedKernelBackend final : public KernelBackend {
 public:
  explicit EmulatedKernelBackend(const KernelBackendOptions& o) : options_(o) {}
  std::string_view name() const override { return "cuda-emulated"; }
  void run(harness::HostCase& c, const PlanOptions& options, std::int32_t drawn_workers) override {
    const std::int32_t workers = options_.workers > 0 ? options_.workers : drawn_workers;
    emulator::EmulatedDevice device;
    emulator::RunOptions o;
    o.seed = options_.schedule_seed;
    device.run(c.problem, emulator::EmulatedDevice::plan(c.problem, workers, options), c.tensors(),
               o);
  }

 private:
  KernelBackendOptions options_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_emulated_kernel_backend(const KernelBackendOptions& options) {
  return std::make_unique<EmulatedKernelBackend>(options);
}

}  // namespace leanattn::checks
