// The device planner's buffers (kernel/plan_kernel.cuh): one allocation, sized once from the
// bounds a captured step may not exceed (batch capacity, KV heads, workers), laid out as the
// planner's scratch and the plan the decode kernel reads. Pure host code: the CUDA engine and
// the emulator (tools/cuda_emulator/emulator/emulated_capture.cpp) lay out the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/common/planner_params.hpp"

namespace leanattn::cuda {

// Plan sizes for `batch` requests of `kv_heads` pairs each on `workers` workers (lean,
// head-major): a worker's range cuts at most one pair at each end, so there are at most
// pairs + workers - 1 segments, workers - 1 split pairs and 2 (workers - 1) slots; the buffers
// hold one more of each (simpler sizes, never short).
struct PlannerBounds {
  std::int32_t batch = 0;
  std::int32_t kv_heads = 0;
  std::int32_t workers = 0;
  std::int64_t max_segments() const {
    return static_cast<std::int64_t>(batch) * kv_heads + workers;
  }
  std::int32_t max_reductions() const { return workers; }
  std::int32_t max_slots() const { return 2 * workers; }
};

// Byte offsets of every array inside the planner's buffer (16-byte aligned). The plan the
// decode kernel reads comes first, so that a plan made on the host (fixed_plan.hpp) reaches it
// in one copy of a prefix: totals, worker_offsets, seq_lens (the host-planned step's lengths;
// the device planner reads the caller's), reductions, then segments, the largest, last. Then
// the planner's scratch and its refusal word.
struct PlannerLayout {
  std::size_t totals = 0, worker_offsets = 0, seq_lens = 0, reductions = 0, segments = 0;
  std::size_t plan_bytes = 0;  // the plan region [0, plan_bytes): segments at their bound
  std::size_t tiles = 0, before = 0, counts = 0, cuts = 0, firsts = 0, cuts_before = 0,
              firsts_before = 0, refused = 0;
  std::size_t bytes = 0;
};

// Throws Error naming batch, kv_heads or workers when a bound is out of range.
PlannerLayout planner_layout(const PlannerBounds& bounds);

// The planner's argument for a buffer of planner_layout(bounds) bytes at `base` and the step's
// lengths seq_lens [bounds.batch] (device memory; requests past the step's batch at 0), each at
// most max_seq_len (the caches' capacity).
PlannerParams planner_params(const PlannerBounds& bounds, void* base, const std::int32_t* seq_lens,
                             std::int32_t max_seq_len, std::int32_t tile_tokens, std::int32_t q_len,
                             std::int32_t window_left);

// Defined in kernel/plan_kernel.cu: the planner's __global__ function (one CTA of
// kPlannerThreads threads, no dynamic shared memory).
const void* lean_plan_kernel_address();

}  // namespace leanattn::cuda
