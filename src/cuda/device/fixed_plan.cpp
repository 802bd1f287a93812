// plan_step(), write_plan_region() (see fixed_plan.hpp).
#include "cuda/device/fixed_plan.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/device/plan_image.hpp"
#include "leanattn/decode_step.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/planner.hpp"

namespace leanattn::cuda {

std::int32_t fixed_step_tile(const DecodeProblem& shape, const PlanOptions& options,
                             const char* who) {
  require_one_q_len(shape, who);  // its buffers and the device planner: one q_len for all
  require(options.strategy == Strategy::lean, "strategy", [&] {
    return std::string("must be lean for ") + who + " (its buffers' bounds are lean's)";
  });
  require(!options.batch_invariant, "batch_invariant",
          [&] { return std::string("is not made by ") + who + " (lean, head-major only)"; });
  require(options.order == LineOrder::automatic || options.order == LineOrder::head_major, "order",
          [&] { return std::string("must be head_major (or automatic) for ") + who; });
  require(options.tile_tokens >= 0 && options.tile_tokens <= kMaxTileTokens, "tile", [&] {
    return "must be in [1, " + std::to_string(kMaxTileTokens) +
           "] tokens, or 0 for the default (got " + std::to_string(options.tile_tokens) + ")";
  });
  return options.tile_tokens > 0 ? options.tile_tokens
                                 : default_tile_tokens(shape.head_dim, shape.value_dim());
}

Plan plan_step(const DecodeProblem& shape, std::span<const std::int32_t> seq_lens,
               std::int32_t workers, std::int32_t tile_tokens) {
  const DecodeProblem step = step_problem(shape, seq_lens);  // Error naming seq_lens
  PlanOptions options;
  options.strategy = Strategy::lean;
  options.order = LineOrder::head_major;
  options.tile_tokens = tile_tokens;
  return make_plan(step, Hardware{workers}, options);
}

std::size_t write_plan_region(const Plan& plan, const PlannerBounds& bounds,
                              std::span<std::byte> region) {
  const PlannerLayout l = planner_layout(bounds);
  require(region.size() >= l.plan_bytes, "plan",
          [] { return "region is smaller than the planner layout's plan region"; });
  require(plan.workers == bounds.workers && plan.batch() == bounds.batch &&
              plan.kv_heads == bounds.kv_heads,
          "plan", [&] {
            return "was made for " + std::to_string(plan.workers) + " workers, batch " +
                   std::to_string(plan.batch()) + " and " + std::to_string(plan.kv_heads) +
                   " KV heads; the fixed buffers are for " + std::to_string(bounds.workers) + ", " +
                   std::to_string(bounds.batch) + " and " + std::to_string(bounds.kv_heads);
          });
  const auto segments = static_cast<std::int64_t>(plan.segments.size());
  const auto reductions = static_cast<std::int64_t>(plan.reductions.size());
  require(segments <= bounds.max_segments() && reductions <= bounds.max_reductions() &&
              plan.num_slots <= bounds.max_slots(),
          "plan", [&] {
            return "has " + std::to_string(segments) + " segments, " + std::to_string(reductions) +
                   " reductions and " + std::to_string(plan.num_slots) +
                   " slots; the fixed buffers hold " + std::to_string(bounds.max_segments()) +
                   ", " + std::to_string(bounds.max_reductions()) + " and " +
                   std::to_string(bounds.max_slots()) + " (a lean, head-major plan always fits)";
          });
  auto put = [&](std::size_t at, const void* data, std::size_t bytes) {
    if (bytes > 0) std::memcpy(region.data() + at, data, bytes);
  };
  const std::int32_t totals[4] = {static_cast<std::int32_t>(segments),
                                  static_cast<std::int32_t>(reductions), plan.num_slots,
                                  static_cast<std::int32_t>(plan.total_tiles)};
  put(l.totals, totals, sizeof totals);
  const std::vector<std::int32_t> offsets(plan.worker_offsets.begin(), plan.worker_offsets.end());
  put(l.worker_offsets, offsets.data(), offsets.size() * 4);
  put(l.seq_lens, plan.seq_lens.data(), plan.seq_lens.size() * 4);
  const std::vector<DeviceReduction> r = device_reductions(plan);
  put(l.reductions, r.data(), r.size() * sizeof(DeviceReduction));
  const std::vector<DeviceSegment> s = device_segments(plan);
  put(l.segments, s.data(), s.size() * sizeof(DeviceSegment));
  return l.segments + s.size() * sizeof(DeviceSegment);
}

}  // namespace leanattn::cuda
