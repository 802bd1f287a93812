// PlannerParams: the device planner's single by-value argument (kernel/plan_kernel.cuh), plain
// data with no CUDA types, built by device/planner_buffers.cpp for the CUDA engine and the
// emulator alike.
#pragma once

#include <cstdint>

#include "cuda/common/kernel_params.hpp"

namespace leanattn::cuda {

// The planner's argument: the step's shape and bounds (fixed at capture) and its device arrays.
struct PlannerParams {
  const std::int32_t* seq_lens;  // [batch] (requests past the step's batch: length 0)
  std::int32_t batch;
  std::int32_t kv_heads;
  std::int32_t workers;
  std::int32_t tile_tokens;
  std::int32_t q_len;
  std::int32_t window_left;  // -1: none
  std::int32_t max_seq_len;  // a length past it, negative or in [1, q_len) is refused: no work
  // Scratch: planned tiles per request and their exclusive scan; per worker its segment count,
  // whether its range starts with a cut and with its pair's first cut, and their scans.
  std::int32_t* tiles;          // [batch]
  std::int64_t* before;         // [batch + 1]
  std::int32_t* counts;         // [workers]
  std::int32_t* cuts;           // [workers]
  std::int32_t* firsts;         // [workers]
  std::int32_t* cuts_before;    // [workers + 1]
  std::int32_t* firsts_before;  // [workers + 1]
  // The plan, as the decode kernel reads it (KernelParams): capacities are the bounds of
  // PlannerBounds (device/planner_buffers.hpp).
  std::int32_t* worker_offsets;  // [workers + 1]
  DeviceSegment* segments;       // [max_segments] = [batch x kv_heads + workers]
  DeviceReduction* reductions;   // [max_reductions] = [workers]
  std::int32_t max_segments;     // (writes past them are dropped: a planner bug cannot
  std::int32_t max_reductions;   //  write outside its buffers)
  std::int32_t* totals;          // [4]: segments, reductions, slots, tiles
  std::int32_t* refused;  // [1]: the first refused request + 1 (0: none; sticky until the host
                          //   clears it)
};

inline constexpr int kPlannerThreads = 256;

}  // namespace leanattn::cuda
