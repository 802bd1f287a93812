// FixedStep (see fixed_step.hpp).
#include "cuda/device/fixed_step.hpp"

#include <algorithm>
#include <mutex>
#include <string>

#include "cuda/device/cuda_check.hpp"
#include "cuda/device/engine_impl.hpp"
#include "cuda/device/fixed_plan.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::cuda {

FixedStep::FixedStep(Engine::Impl& e, const DecodeProblem& s, const PlanOptions& options,
                     const char* who)
    : engine(&e), shape(s) {
  validate(shape);
  tile_tokens = fixed_step_tile(shape, options, who);  // Error naming the option
  max_seq_len = *std::max_element(shape.seq_lens.begin(), shape.seq_lens.end());
  const std::lock_guard lock(e.mutex);
  kernel = &e.kernel_for(shape);
  DeviceGuard guard(e.info.ordinal);
  // Workers: one per resident CTA (raises the shared-memory limit), or the engine's override.
  const int resident = e.occupancy(*kernel) * e.info.sm_count;
  bounds = {shape.batch(), shape.kv_heads,
            e.workers_override > 0 ? e.workers_override : std::min(resident, kMaxWorkers)};
  if (e.dependent_launch) {
    cudaFuncAttributes decode{}, plan{};
    check(cudaFuncGetAttributes(&decode, kernel->kernel), "cudaFuncGetAttributes (decode)");
    check(cudaFuncGetAttributes(&plan, lean_plan_kernel_address()),
          "cudaFuncGetAttributes (planner)");
    dependent_launch = decode.binaryVersion >= 90 && plan.binaryVersion >= 90;
  }
  layout = planner_layout(bounds);
  planner = DeviceBuffer(layout.bytes);
  workspace_layout = device_workspace_layout(bounds.max_slots(), shape.group_size() * shape.q_len,
                                             shape.value_dim());
  workspace = DeviceBuffer(static_cast<std::size_t>(workspace_layout.bytes));
  check(cudaMemset(workspace.as<std::byte>() + workspace_layout.counters_offset, 0,
                   static_cast<std::size_t>(kWorkspaceCounters) * 4),
        "cudaMemset (workspace counters)");
  check(cudaMemset(planner.data(), 0, layout.bytes), "cudaMemset (planner)");
  // The memsets ran on the legacy stream; a non-blocking stream would not wait for them.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (step setup)");
}

void FixedStep::check_tensors(const DecodeTensors& tensors) const {
  validate(shape, tensors, MemorySpace::device);
  check_kernel_alignment(shape, tensors);
  check_value_source(*kernel, shape, tensors);
}

void FixedStep::launch_decode(const DecodeTensors& tensors, const std::int32_t* seq_lens,
                              cudaStream_t s, bool after_planner) {
  auto* base = planner.as<std::byte>();
  DevicePlan dp;
  dp.worker_offsets = reinterpret_cast<const std::int32_t*>(base + layout.worker_offsets);
  dp.segments = reinterpret_cast<const DeviceSegment*>(base + layout.segments);
  dp.reductions = reinterpret_cast<const DeviceReduction*>(base + layout.reductions);
  dp.seq_lens = seq_lens;
  KernelParams params = make_kernel_params(shape, tensors, tile_tokens, dp,
                                           workspace_pointers(workspace_layout, workspace.data()));
  void* args[] = {&params};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(bounds.workers));
  config.blockDim = dim3(static_cast<unsigned>(kernel->threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(kernel->smem_bytes);
  config.stream = s;
  cudaLaunchAttribute dependent{};  // the kernel waits in ptx::grid_dependency_wait()
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  if (after_planner && dependent_launch) {
    config.attrs = &dependent;
    config.numAttrs = 1;
  }
  check(cudaLaunchKernelExC(&config, kernel->kernel, args),
        ("cudaLaunchKernelExC (decode kernel " + kernel->name + ")").c_str());
  check(cudaGetLastError(), "decode kernel launch");
}

}  // namespace leanattn::cuda
