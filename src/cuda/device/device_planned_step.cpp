// DevicePlannedStep (see leanattn/cuda_engine.hpp): a FixedStep (fixed_step.hpp: the buffers
// sized once for the bounds, the decode launch) and per run two launches on one stream, the
// planner (kernel/plan_kernel.cuh, one CTA) and the decode kernel reading the plan it wrote.
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "cuda/common/planner_params.hpp"
#include "cuda/device/cuda_check.hpp"
#include "cuda/device/engine_impl.hpp"
#include "cuda/device/fixed_step.hpp"
#include "cuda/device/planner_buffers.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"

namespace leanattn::cuda {

struct DevicePlannedStep::Impl {
  FixedStep step;
  Impl(Engine::Impl& engine, const DecodeProblem& shape, const PlanOptions& options)
      : step(engine, shape, options, "the device planner") {}
};

DevicePlannedStep::DevicePlannedStep(Engine& engine, const DecodeProblem& shape,
                                     const PlanOptions& options)
    : impl_(std::make_unique<Impl>(*engine.impl_, shape, options)) {}

DevicePlannedStep::~DevicePlannedStep() = default;

std::int32_t DevicePlannedStep::workers() const {
  return impl_->step.bounds.workers;
}

std::int32_t DevicePlannedStep::tile_tokens() const {
  return impl_->step.tile_tokens;
}

std::int64_t DevicePlannedStep::device_bytes() const {
  return impl_->step.device_bytes();
}

bool DevicePlannedStep::dependent_launch() const {
  return impl_->step.dependent_launch;
}

void DevicePlannedStep::run(const std::int32_t* seq_lens, const DecodeTensors& tensors,
                            void* stream) {
  FixedStep& m = impl_->step;
  require(seq_lens != nullptr, "seq_lens", [] { return "must be a device pointer, not null"; });
  m.check_tensors(tensors);  // before the planner: a refused call launches nothing
  const auto s = static_cast<cudaStream_t>(stream);
  PlannerParams planner = planner_params(m.bounds, m.planner.data(), seq_lens, m.max_seq_len,
                                         m.tile_tokens, m.shape.q_len, m.shape.variant.window_left);
  const std::lock_guard lock(m.engine->mutex);
  DeviceGuard guard(m.engine->info.ordinal);
  static_cast<void>(cudaGetLastError());  // an earlier, unrelated error is not this launch's
  void* planner_args[] = {&planner};
  ::leanattn::cuda::check(cudaLaunchKernel(lean_plan_kernel_address(), dim3(1),
                                           dim3(kPlannerThreads), planner_args, 0, s),
                          "cudaLaunchKernel (device planner)");
  m.launch_decode(tensors, seq_lens, s, /*after_planner=*/true);
}

void DevicePlannedStep::check(void* stream) {
  FixedStep& m = impl_->step;
  const auto s = static_cast<cudaStream_t>(stream);
  require(!is_capturing(s), "stream", [] {
    return "is capturing: check() waits for the stream, which a capture does not allow";
  });
  ::leanattn::cuda::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  std::byte* word = m.planner.as<std::byte>() + m.layout.refused;
  std::int32_t refused = 0;
  ::leanattn::cuda::check(cudaMemcpy(&refused, word, 4, cudaMemcpyDeviceToHost),
                          "cudaMemcpy (planner refusal word)");
  if (refused != 0) {  // clear the sticky word, then report
    const std::int32_t zero = 0;
    ::leanattn::cuda::check(cudaMemcpy(word, &zero, 4, cudaMemcpyHostToDevice),
                            "cudaMemcpy (planner refusal word)");
  }
  require(refused == 0, "seq_lens", [&] {
    return "request " + std::to_string(refused - 1) + " of a run since the last check had a " +
           "length below 0, above the step's bound " + std::to_string(m.max_seq_len) +
           " or below q_len " + std::to_string(m.shape.q_len) +
           " (nothing was computed in that run)";
  });
}

}  // namespace leanattn::cuda
