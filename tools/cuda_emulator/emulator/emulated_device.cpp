// EmulatedDevice (see emulated_device.hpp). Mirrors src/cuda/device/engine.cpp step for step;
// the plan image and KernelParams come from the engine's own host code (plan_image.cpp,
// kernel_arguments.cpp), the kernel from the registry built over the host-compiled
// instantiations of the configuration table.
#include "emulator/emulated_device.hpp"

#include <bit>
#include <cstring>

#include "cuda/common/kernel_params.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/plan_image.hpp"
#include "cuda/kernel_registry.hpp"
#include "emulator/device_workspace.hpp"
#include "emulator/launch_helpers.hpp"
#include "leanattn/error.hpp"

namespace leanattn::emulator {

namespace {

KernelInfo info_of(const cuda::KernelHandle& k) {
  return {k.name,   k.dtype,   k.kv_bits,    k.head_dim,   k.warps_m, k.rows,    k.block_n,
          k.stages, k.threads, k.smem_bytes, k.head_dim_v, k.warps_v, k.v_from_k};
}

}  // namespace

std::vector<KernelInfo> emulated_kernels() {
  std::vector<KernelInfo> all;
  for (const cuda::KernelHandle& k : cuda::compiled_kernels()) all.push_back(info_of(k));
  return all;
}

std::string why_unsupported(const DecodeProblem& problem) {
  return cuda::why_unsupported(problem);
}

KernelInfo kernel_for(const DecodeProblem& problem) {
  return info_of(handle_for(problem));
}

struct EmulatedDevice::Impl {
  CounterZeroing counters;
  Buffer owned;
  std::size_t owned_bytes = 0;
};

EmulatedDevice::EmulatedDevice() : impl_(std::make_unique<Impl>()) {}
EmulatedDevice::~EmulatedDevice() = default;

Plan EmulatedDevice::plan(const DecodeProblem& problem, std::int32_t workers,
                          const PlanOptions& options) {
  validate(problem);
  return make_plan(problem, Hardware{workers}, resolve_plan_options(options, PlanTarget::gpu));
}

WorkspaceLayout EmulatedDevice::workspace_layout(const Plan& plan) {
  return device_layout(plan);
}

void EmulatedDevice::run(const DecodeProblem& problem, const Plan& plan,
                         const DecodeTensors& tensors, void* workspace, const RunOptions& options) {
  validate(problem);
  validate(problem, tensors, MemorySpace::host);
  check_plan_matches(plan, problem);
  const cuda::KernelHandle& kernel = handle_for(problem);
  cuda::check_kernel_alignment(problem, tensors);
  cuda::check_value_source(kernel, problem, tensors);
  cuda::check_workspace(plan, workspace);
  check_plan(plan);
  const cuda::PlanImage image = cuda::make_plan_image(plan);
  const std::byte* base = image.bytes.data();
  cuda::DevicePlan dp;
  dp.worker_offsets = reinterpret_cast<const std::int32_t*>(base + image.worker_offsets_at);
  dp.segments = reinterpret_cast<const cuda::DeviceSegment*>(base + image.segments_at);
  dp.reductions = reinterpret_cast<const cuda::DeviceReduction*>(base + image.reductions_at);
  dp.seq_lens = reinterpret_cast<const std::int32_t*>(base + image.seq_lens_at);
  if (image.has_query_start_loc) {
    dp.query_start_loc = reinterpret_cast<const std::int32_t*>(base + image.query_start_loc_at);
  }
  impl_->counters.before_run(plan, workspace);

  launch_decode(kernel, plan.workers,
                cuda::make_kernel_params(problem, tensors, plan, dp, workspace), options);
}

void EmulatedDevice::run(const DecodeProblem& problem, const Plan& plan,
                         const DecodeTensors& tensors, const RunOptions& options) {
  const auto need = static_cast<std::size_t>(device_layout(plan).bytes);
  if (impl_->owned_bytes < need) {
    impl_->counters.forget(impl_->owned.get(), impl_->owned_bytes);
    impl_->owned = allocate_poisoned(need);
    impl_->counters.forget(impl_->owned.get(), need);
    impl_->owned_bytes = need;
  }
  run(problem, plan, tensors, impl_->owned.get(), options);
}

}  // namespace leanattn::emulator
