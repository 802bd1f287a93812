// HostPlannedStep (see leanattn/cuda_engine.hpp): a FixedStep (fixed_step.hpp) whose plan region
// is filled from the host: plan() plans the lengths (fixed_plan.hpp), writes the region into one
// of two pinned staging buffers and copies its used prefix asynchronously; run() is the decode
// launch alone, reading the region and the lengths copied with it.
#include <cuda_runtime.h>

#include <array>
#include <mutex>
#include <optional>
#include <span>

#include "cuda/device/cuda_check.hpp"
#include "cuda/device/device_buffer.hpp"
#include "cuda/device/engine_impl.hpp"
#include "cuda/device/fixed_plan.hpp"
#include "cuda/device/fixed_step.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"

namespace leanattn::cuda {

struct HostPlannedStep::Impl {
  FixedStep step;
  std::array<PinnedBuffer, 2> staging;
  // Recorded after the copy out of staging[i]; made by the first plan(), on the engine's device.
  std::array<std::optional<Event>, 2> copied;
  int next = 0;
  Impl(Engine::Impl& engine, const DecodeProblem& shape, const PlanOptions& options)
      : step(engine, shape, options, "a host-planned step"),
        staging{PinnedBuffer(step.layout.plan_bytes), PinnedBuffer(step.layout.plan_bytes)} {}
  ~Impl() {  // a copy out of a staging buffer may still be in flight
    for (std::optional<Event>& e : copied) {
      try {
        if (e) e->wait();
      } catch (const CudaError&) {  // a failed device: nothing left to wait for
      }
    }
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

HostPlannedStep::HostPlannedStep(Engine& engine, const DecodeProblem& shape,
                                 const PlanOptions& options) {
  DeviceGuard guard(engine.impl_->info.ordinal);  // the staging's context: the engine's device
  impl_ = std::make_unique<Impl>(*engine.impl_, shape, options);
}

HostPlannedStep::~HostPlannedStep() = default;

std::int32_t HostPlannedStep::workers() const {
  return impl_->step.bounds.workers;
}

std::int32_t HostPlannedStep::tile_tokens() const {
  return impl_->step.tile_tokens;
}

std::int64_t HostPlannedStep::device_bytes() const {
  return impl_->step.device_bytes();
}

void HostPlannedStep::plan(std::span<const std::int32_t> seq_lens, void* stream) {
  Impl& m = *impl_;
  FixedStep& f = m.step;
  const auto s = static_cast<cudaStream_t>(stream);
  DeviceGuard guard(f.engine->info.ordinal);
  require(!is_capturing(s), "stream", [] {
    return "is capturing: plan() is the host's work between replays (capture run() only)";
  });
  const Plan plan = plan_step(f.shape, seq_lens, f.bounds.workers, f.tile_tokens);
  const int k = m.next;
  std::optional<Event>& copied = m.copied[static_cast<std::size_t>(k)];
  if (copied) copied->wait();  // its copy of two calls back has run
  if (!copied) copied.emplace();
  PinnedBuffer& staging = m.staging[static_cast<std::size_t>(k)];
  const std::size_t bytes =
      write_plan_region(plan, f.bounds, {static_cast<std::byte*>(staging.data()), staging.size()});
  check(cudaMemcpyAsync(f.planner.data(), staging.data(), bytes, cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync (host plan)");
  copied->record(stream);
  m.next = 1 - k;
}

void HostPlannedStep::run(const DecodeTensors& tensors, void* stream) {
  FixedStep& f = impl_->step;
  f.check_tensors(tensors);
  const std::lock_guard lock(f.engine->mutex);
  DeviceGuard guard(f.engine->info.ordinal);
  static_cast<void>(cudaGetLastError());  // an earlier, unrelated error is not this launch's
  const auto* lens =
      reinterpret_cast<const std::int32_t*>(f.planner.as<std::byte>() + f.layout.seq_lens);
  f.launch_decode(tensors, lens, static_cast<cudaStream_t>(stream));
}

}  // namespace leanattn::cuda
