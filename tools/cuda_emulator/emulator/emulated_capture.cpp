// EmulatedCapturedStep (see emulated_capture.hpp): the device planner's buffers
// (src/cuda/device/planner_buffers.cpp) and a workspace sized once for the bounds, then per
// replay two launches on the emulator, the planner (one CTA) and the decode kernel (one CTA per
// worker), the second reading the plan the first wrote; or the host's plan copied in
// (src/cuda/device/fixed_plan.cpp) and the decode kernel alone.
#include "emulator/emulated_capture.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "cuda/common/planner_params.hpp"
#include "cuda/device/fixed_plan.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/planner_buffers.hpp"
#include "cuda/device/workspace.hpp"
#include "emulator/launch.hpp"
#include "emulator/launch_helpers.hpp"
#include "leanattn/decode_step.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/planner.hpp"

namespace leanattn::emulator {

struct EmulatedCapturedStep::Impl {
  DecodeProblem shape;
  cuda::PlannerBounds bounds;
  std::int32_t tile_tokens = 0;
  std::int32_t max_seq_len = 0;        // the shape's longest request: the caches' capacity
  std::vector<std::int32_t> seq_lens;  // the "device" lengths
  Buffer planner;
  std::size_t planner_bytes = 0;
  WorkspaceLayout workspace_layout;
  Buffer workspace;
  cuda::PlannerParams params{};
  std::vector<std::byte> staging;  // plan_on_host(): the pinned staging buffer's role
};

EmulatedCapturedStep::EmulatedCapturedStep(const DecodeProblem& shape, std::int32_t workers,
                                           std::int32_t tile_tokens)
    : impl_(std::make_unique<Impl>()) {
  validate(shape);
  require_one_q_len(shape, "the device planner");
  validate_workers(workers);
  require(tile_tokens >= 1 && tile_tokens <= kMaxTileTokens, "tile", [&] {
    return "must be in [1, " + std::to_string(kMaxTileTokens) + "] (got " +
           std::to_string(tile_tokens) + ")";
  });
  Impl& m = *impl_;
  m.shape = shape;
  m.tile_tokens = tile_tokens;
  m.bounds = {shape.batch(), shape.kv_heads, workers};
  m.seq_lens.assign(shape.seq_lens.size(), 0);
  m.planner_bytes = cuda::planner_layout(m.bounds).bytes;
  m.planner = allocate_poisoned(m.planner_bytes);
  std::memset(m.planner.get(), 0, m.planner_bytes);  // as the engine's (the refusal word at 0)
  m.max_seq_len = *std::max_element(shape.seq_lens.begin(), shape.seq_lens.end());
  m.params = cuda::planner_params(m.bounds, m.planner.get(), m.seq_lens.data(), m.max_seq_len,
                                  tile_tokens, shape.q_len, shape.variant.window_left);
  // The workspace for the bound, its counters zeroed once (as the engine zeroes a new
  // workspace's before the capture); every launch leaves them at zero.
  m.workspace_layout = cuda::device_workspace_layout(
      m.bounds.max_slots(), shape.group_size() * shape.q_len, shape.value_dim());
  m.workspace = allocate_poisoned(static_cast<std::size_t>(m.workspace_layout.bytes));
  std::memset(m.workspace.get() + m.workspace_layout.counters_offset, 0,
              static_cast<std::size_t>(cuda::kWorkspaceCounters) * 4);
}

EmulatedCapturedStep::~EmulatedCapturedStep() = default;

std::span<std::int32_t> EmulatedCapturedStep::seq_lens() {
  return impl_->seq_lens;
}

std::size_t EmulatedCapturedStep::workspace_bytes() const {
  return static_cast<std::size_t>(impl_->workspace_layout.bytes);
}

std::size_t EmulatedCapturedStep::planner_bytes() const {
  return impl_->planner_bytes;
}

void EmulatedCapturedStep::plan_only(const RunOptions& options) {
  const KernelCall<cuda::PlannerParams> call{
      std::bit_cast<void (*)(cuda::PlannerParams)>(cuda::lean_plan_kernel_address()),
      impl_->params};
  Launch l;
  l.blocks = 1;
  l.threads = cuda::kPlannerThreads;
  l.body = run_kernel<cuda::PlannerParams>;
  l.context = &call;
  l.seed = options.seed;
  l.mutations = options.mutations;
  const std::string error = launch(l);
  if (!error.empty()) throw Error("kernel", "device planner: " + error);
}

void EmulatedCapturedStep::check_tensors(const DecodeTensors& tensors) const {
  const Impl& m = *impl_;
  // What the host can check: the tensors, against the captured shape (its lengths are bounds).
  validate(m.shape, tensors, MemorySpace::host);
  cuda::check_kernel_alignment(m.shape, tensors);
  cuda::check_value_source(handle_for(m.shape), m.shape, tensors);
}

void EmulatedCapturedStep::launch_over_region(const DecodeTensors& tensors,
                                              const std::int32_t* seq_lens,
                                              const RunOptions& options) {
  const Impl& m = *impl_;
  const cuda::KernelHandle& kernel = handle_for(m.shape);
  cuda::DevicePlan dp;
  dp.worker_offsets = m.params.worker_offsets;
  dp.segments = m.params.segments;
  dp.reductions = m.params.reductions;
  dp.seq_lens = seq_lens;
  launch_decode(
      kernel, m.bounds.workers,
      cuda::make_kernel_params(m.shape, tensors, m.tile_tokens, dp,
                               cuda::workspace_pointers(m.workspace_layout, m.workspace.get())),
      options);
}

void EmulatedCapturedStep::replay(const DecodeTensors& tensors, const RunOptions& options) {
  Impl& m = *impl_;
  check_tensors(tensors);  // before the planner: a refused call runs nothing
  plan_only(options);      // a refused length: an empty plan, the decode below does nothing
  launch_over_region(tensors, m.seq_lens.data(), options);
}

void EmulatedCapturedStep::plan_on_host(std::span<const std::int32_t> lens) {
  Impl& m = *impl_;
  const Plan plan = cuda::plan_step(m.shape, lens, m.bounds.workers, m.tile_tokens);
  if (m.staging.empty()) m.staging.resize(cuda::planner_layout(m.bounds).plan_bytes);
  const std::size_t bytes = cuda::write_plan_region(plan, m.bounds, m.staging);
  std::memcpy(m.planner.get(), m.staging.data(), bytes);  // the asynchronous copy's
}

void EmulatedCapturedStep::replay_decode(const DecodeTensors& tensors, const RunOptions& options) {
  Impl& m = *impl_;
  check_tensors(tensors);
  const cuda::PlannerLayout l = cuda::planner_layout(m.bounds);
  launch_over_region(tensors, reinterpret_cast<const std::int32_t*>(m.planner.get() + l.seq_lens),
                     options);
}

void EmulatedCapturedStep::check() {
  Impl& m = *impl_;
  const std::int32_t refused = *m.params.refused;
  *m.params.refused = 0;
  require(refused == 0, "seq_lens", [&] {
    return "request " + std::to_string(refused - 1) + " of a replay since the last check had a " +
           "length below 0, above the step's bound " + std::to_string(m.max_seq_len) +
           " or below q_len " + std::to_string(m.shape.q_len) +
           " (nothing was computed in that replay)";
  });
}

DevicePlanView EmulatedCapturedStep::plan() const {
  const cuda::PlannerParams& p = impl_->params;
  DevicePlanView v;
  v.worker_offsets.assign(p.worker_offsets, p.worker_offsets + p.workers + 1);
  // (Counts clamped to the buffers: a broken planner's totals may be anything.)
  const std::int32_t segments = std::clamp(p.totals[0], 0, p.max_segments);
  const std::int32_t reductions = std::clamp(p.totals[1], 0, p.max_reductions);
  for (std::int32_t i = 0; i < segments; ++i) {
    const cuda::DeviceSegment& s = p.segments[i];
    v.segments.push_back({s.request, s.kv_head, s.token_begin, s.token_end, s.slot, s.reduction});
  }
  for (std::int32_t i = 0; i < reductions; ++i) {
    const cuda::DeviceReduction& r = p.reductions[i];
    v.reductions.push_back({r.request, r.kv_head, r.slot_begin, r.num_slots});
  }
  v.num_slots = p.totals[2];
  v.total_tiles = p.totals[3];
  v.refused = *p.refused;
  return v;
}

}  // namespace leanattn::emulator
