// PlanImage: a Plan flattened into the bytes the decode kernel reads (kernel_params.hpp's device
// structs), ready for one host-to-device copy. Its bytes are also the plan cache's key
// (plan_cache.hpp): equal images run identically. Pure host code (tests/cuda/host_adapter_test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/common/kernel_params.hpp"
#include "leanattn/plan.hpp"

namespace leanattn::cuda {

struct PlanImage {
  // Sections, each 16-byte aligned inside `bytes`:
  //   header          int32 [8]: workers, segments, reductions, batch, tile_tokens, group_size,
  //                              head_dim, num_slots
  //   worker_offsets  int32 [workers + 1]
  //   segments        DeviceSegment [segments]
  //   reductions      DeviceReduction [reductions]
  //   seq_lens        int32 [batch]
  //   query_start_loc int32 [batch + 1] (Plan::query_start_loc; empty without it)
  std::vector<std::byte> bytes;
  std::size_t worker_offsets_at = 0;
  std::size_t segments_at = 0;
  std::size_t reductions_at = 0;
  std::size_t seq_lens_at = 0;
  std::size_t query_start_loc_at = 0;  // (the end of the bytes when the plan has none)
  bool has_query_start_loc = false;
  std::int32_t workers = 0;
  std::int32_t tile_tokens = 0;
  std::int32_t group_size = 0;
};

// The plan's segments and reductions as the decode kernel reads them (key ranges, -1 for the
// slot and reduction of a direct segment).
std::vector<DeviceSegment> device_segments(const Plan& plan);
std::vector<DeviceReduction> device_reductions(const Plan& plan);

// Throws Error("plan", ...) when a count does not fit the kernel's 32-bit indices.
PlanImage make_plan_image(const Plan& plan);

// 64-bit FNV-1a of the image bytes.
std::uint64_t image_hash(const PlanImage& image);

}  // namespace leanattn::cuda
