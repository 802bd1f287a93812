// DevicePlannedStep (see leanattn/cuda_engine.hpp): the device planner's buffers
// (planner_buffers.cpp) and a workspace sized once for the bounds, then per run two launches on
// one stream, the planner (kernel/plan_kernel.cuh, one CTA) and the decode kernel reading the
// plan it wrote; the engine's kernel lookup, occupancy and tensor checks are reused.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/common/planner_params.hpp"
#include "cuda/device/cuda_check.hpp"
#include "cuda/device/device_buffer.hpp"
#include "cuda/device/engine_impl.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/planner_buffers.hpp"
#include "cuda/device/workspace.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/heuristics.hpp"

namespace leanattn::cuda {

struct DevicePlannedStep::Impl {
  Engine* engine = nullptr;
  DecodeProblem shape;
  const KernelHandle* kernel = nullptr;
  PlannerBounds bounds;
  std::int32_t tile_tokens = 0;
  std::int32_t max_seq_len = 0;
  DeviceBuffer planner;
  PlannerLayout planner_layout;
  WorkspaceLayout workspace_layout;
  DeviceBuffer workspace;
};

DevicePlannedStep::DevicePlannedStep(Engine& engine, const DecodeProblem& shape,
                                     const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  validate(shape);
  require(options.strategy == Strategy::lean, "strategy",
          [] { return "must be lean for the device planner (its buffers' bounds are lean's)"; });
  require(!options.batch_invariant, "batch_invariant",
          [] { return "is not made by the device planner (lean, head-major only)"; });
  require(options.order == LineOrder::automatic || options.order == LineOrder::head_major, "order",
          [] { return "must be head_major (or automatic) for the device planner"; });
  require(options.tile_tokens >= 0 && options.tile_tokens <= kMaxTileTokens, "tile", [&] {
    return "must be in [1, " + std::to_string(kMaxTileTokens) +
           "] tokens, or 0 for the default (got " + std::to_string(options.tile_tokens) + ")";
  });
  Impl& m = *impl_;
  m.engine = &engine;
  m.shape = shape;
  m.tile_tokens = options.tile_tokens > 0 ? options.tile_tokens
                                          : default_tile_tokens(shape.head_dim, shape.value_dim());
  m.max_seq_len = *std::max_element(shape.seq_lens.begin(), shape.seq_lens.end());
  m.bounds = {shape.batch(), shape.kv_heads, engine.workers_for(shape)};
  Engine::Impl& e = *engine.impl_;
  const std::lock_guard lock(e.mutex);
  m.kernel = &e.kernel_for(shape);
  DeviceGuard guard(e.info.ordinal);
  e.occupancy(*m.kernel);  // raises the shared-memory limit
  m.planner_layout = planner_layout(m.bounds);
  m.planner = DeviceBuffer(m.planner_layout.bytes);
  m.workspace_layout = device_workspace_layout(m.bounds.max_slots(),
                                               shape.group_size() * shape.q_len, shape.value_dim());
  m.workspace = DeviceBuffer(static_cast<std::size_t>(m.workspace_layout.bytes));
  ::leanattn::cuda::check(
      cudaMemset(m.workspace.as<std::byte>() + m.workspace_layout.counters_offset, 0,
                 static_cast<std::size_t>(kWorkspaceCounters) * 4),
      "cudaMemset (workspace counters)");
  ::leanattn::cuda::check(cudaMemset(m.planner.data(), 0, m.planner_layout.bytes),
                          "cudaMemset (planner)");
  // The memsets ran on the legacy stream; a non-blocking stream would not wait for them.
  ::leanattn::cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (planner setup)");
}

DevicePlannedStep::~DevicePlannedStep() = default;

std::int32_t DevicePlannedStep::workers() const {
  return impl_->bounds.workers;
}

std::int32_t DevicePlannedStep::tile_tokens() const {
  return impl_->tile_tokens;
}

std::int64_t DevicePlannedStep::device_bytes() const {
  return static_cast<std::int64_t>(impl_->planner_layout.bytes) + impl_->workspace_layout.bytes;
}

void DevicePlannedStep::run(const std::int32_t* seq_lens, const DecodeTensors& tensors,
                            void* stream) {
  Impl& m = *impl_;
  require(seq_lens != nullptr, "seq_lens", [] { return "must be a device pointer, not null"; });
  validate(m.shape, tensors, MemorySpace::device);
  check_kernel_alignment(m.shape, tensors);
  check_value_source(*m.kernel, m.shape, tensors);
  const auto s = static_cast<cudaStream_t>(stream);
  PlannerParams planner = planner_params(m.bounds, m.planner.data(), seq_lens, m.max_seq_len,
                                         m.tile_tokens, m.shape.q_len, m.shape.variant.window_left);
  DevicePlan dp;
  dp.worker_offsets = planner.worker_offsets;
  dp.segments = planner.segments;
  dp.reductions = planner.reductions;
  dp.seq_lens = seq_lens;
  KernelParams params =
      make_kernel_params(m.shape, tensors, m.tile_tokens, dp,
                         workspace_pointers(m.workspace_layout, m.workspace.data()));
  Engine::Impl& e = *m.engine->impl_;
  const std::lock_guard lock(e.mutex);
  DeviceGuard guard(e.info.ordinal);
  static_cast<void>(cudaGetLastError());  // an earlier, unrelated error is not this launch's
  void* planner_args[] = {&planner};
  ::leanattn::cuda::check(cudaLaunchKernel(lean_plan_kernel_address(), dim3(1),
                                           dim3(kPlannerThreads), planner_args, 0, s),
                          "cudaLaunchKernel (device planner)");
  void* args[] = {&params};
  ::leanattn::cuda::check(
      cudaLaunchKernel(m.kernel->kernel, dim3(static_cast<unsigned>(m.bounds.workers)),
                       dim3(static_cast<unsigned>(m.kernel->threads)), args,
                       static_cast<std::size_t>(m.kernel->smem_bytes), s),
      ("cudaLaunchKernel (decode kernel " + m.kernel->name + ")").c_str());
  ::leanattn::cuda::check(cudaGetLastError(), "decode kernel launch");
}

void DevicePlannedStep::check(void* stream) {
  Impl& m = *impl_;
  const auto s = static_cast<cudaStream_t>(stream);
  require(!is_capturing(s), "stream", [] {
    return "is capturing: check() waits for the stream, which a capture does not allow";
  });
  ::leanattn::cuda::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  const PlannerLayout& l = m.planner_layout;
  std::int32_t refused = 0;
  ::leanattn::cuda::check(
      cudaMemcpy(&refused, m.planner.as<std::byte>() + l.totals + 4 * 4, 4, cudaMemcpyDeviceToHost),
      "cudaMemcpy (planner totals)");
  if (refused != 0) {  // clear the sticky word, then report
    const std::int32_t zero = 0;
    ::leanattn::cuda::check(
        cudaMemcpy(m.planner.as<std::byte>() + l.totals + 4 * 4, &zero, 4, cudaMemcpyHostToDevice),
        "cudaMemcpy (planner totals)");
  }
  require(refused == 0, "seq_lens", [&] {
    return "request " + std::to_string(refused - 1) + " of a run since the last check had a " +
           "length below 0, above the step's bound " + std::to_string(m.max_seq_len) +
           " or below q_len " + std::to_string(m.shape.q_len) +
           " (nothing was computed in that run)";
  });
}

}  // namespace leanattn::cuda
