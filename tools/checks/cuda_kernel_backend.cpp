// The CUDA engine as a kernel backend of `leanattn check --backend cuda` (CUDA builds): the
// executor seam's "cuda" executor, run on a device copy of the case (cuda_harness/device_case.hpp)
// whose output is copied back.
#include "checks/kernel_checks.hpp"
#include "cuda_harness/device_case.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/executor.hpp"

namespace leanattn::checks {

namespace {

class CudaKernelBackend final : public KernelBackend {
 public:
  CudaKernelBackend() : executor_(make_executor("cuda")) {}
  std::string_view name() const override { return "cuda"; }
  void run(harness::HostCase& c, const PlanOptions& options, std::int32_t) override {
    cuda::DeviceCase d(c);
    executor_->run(c.problem, executor_->plan(c.problem, options), d.tensors(), nullptr);
    d.download(c);
  }

 private:
  std::unique_ptr<Executor> executor_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_cuda_kernel_backend(const KernelBackendOptions&) {
  require(cuda::device_available(), "backend",
          [] { return "cuda: no CUDA device is available on this machine"; });
  return std::make_unique<CudaKernelBackend>();
}

}  // namespace leanattn::checks
