// A decode step captured once and replayed with new lengths, as a serving engine replays a CUDA
// graph (issue 33): fixed shape, workers and tile, one plan region and one workspace. Either as
// DevicePlannedStep: each replay() runs the device planner (src/cuda/kernel/plan_kernel.cuh)
// over the lengths last written to seq_lens(), then the decode kernel over the plan it wrote,
// with nothing planned on the host; or as HostPlannedStep: plan_on_host() plans on the host and
// copies the plan into the region (src/cuda/device/fixed_plan.hpp), and replay_decode() runs the
// decode kernel alone over it. Both kernels are the CUDA build's own source, run by the emulator.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "emulator/emulated_device.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::emulator {

// The plan the device planner wrote, in the kernel's terms: segments as (request, kv_head,
// first key, end key, slot or -1, reduction or -1) per worker, reductions as (request, kv_head,
// first slot, slots).
struct DevicePlanView {
  std::vector<std::int32_t> worker_offsets;             // [workers + 1]
  std::vector<std::array<std::int32_t, 6>> segments;    // [segments]
  std::vector<std::array<std::int32_t, 4>> reductions;  // [reductions]
  std::int32_t num_slots = 0;
  std::int64_t total_tiles = 0;
  std::int32_t refused = 0;  // the sticky refusal word: a request + 1 whose length was out of range
};

class EmulatedCapturedStep {
 public:
  // shape: heads, widths, types, q_len and variant of every step; its batch is the capacity
  // (requests past a step's batch get length 0) and its longest request the most keys any
  // request may have (the caches' capacity). Throws Error naming workers or tile when out
  // of range.
  EmulatedCapturedStep(const DecodeProblem& shape, std::int32_t workers, std::int32_t tile_tokens);
  ~EmulatedCapturedStep();
  EmulatedCapturedStep(const EmulatedCapturedStep&) = delete;
  EmulatedCapturedStep& operator=(const EmulatedCapturedStep&) = delete;

  // The "device" lengths array [batch] the replays read.
  std::span<std::int32_t> seq_lens();
  // Plans and decodes the step with the current lengths (tensors laid out for the shape: dense
  // strides of its batch), as DevicePlannedStep::run does: a length that is negative, above the
  // capacity or in [1, q_len) makes the planner plan nothing (the decode then leaves the outputs
  // as they were) and sets the sticky refusal word. A failed launch: Error("kernel", ...).
  void replay(const DecodeTensors& tensors, const RunOptions& options = {});
  // DevicePlannedStep::check(): throws Error("seq_lens", ...) naming the request when a replay
  // since the last check was refused, and clears the word.
  void check();
  // Only the planner (tests).
  void plan_only(const RunOptions& options = {});
  // HostPlannedStep::plan(): plans `lens` (host, <= capacity; the rest 0) on the host and copies
  // the plan, with the lengths, into the plan region. Error naming seq_lens as the engine's.
  void plan_on_host(std::span<const std::int32_t> lens);
  // HostPlannedStep::run(): the decode kernel alone, over the plan region and its lengths.
  void replay_decode(const DecodeTensors& tensors, const RunOptions& options = {});
  // What the plan region holds (the last planner run's or plan_on_host()'s plan).
  DevicePlanView plan() const;
  // Bytes of the workspace (slots for the bound: 2 x workers) and of the planner's buffer.
  std::size_t workspace_bytes() const;
  std::size_t planner_bytes() const;

 private:
  // The engine's checks of the tensors (Error naming the argument), before anything runs.
  void check_tensors(const DecodeTensors& tensors) const;
  // The decode kernel over the plan region, with seq_lens [batch] as the lengths.
  void launch_over_region(const DecodeTensors& tensors, const std::int32_t* seq_lens,
                          const RunOptions& options);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leanattn::emulator
