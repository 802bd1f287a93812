// planner_layout(), planner_params() (see planner_buffers.hpp).
#include "cuda/device/planner_buffers.hpp"

#include <string>

#include "leanattn/error.hpp"

namespace leanattn::cuda {

namespace {

std::size_t align16(std::size_t x) {
  return (x + 15) / 16 * 16;
}

}  // namespace

PlannerLayout planner_layout(const PlannerBounds& b) {
  require(b.batch >= 1 && b.batch <= (1 << 20) && b.max_segments() < (1LL << 31), "batch", [&] {
    return "the device planner's batch capacity must be in [1, 2^20] (got " +
           std::to_string(b.batch) + ")";
  });
  require(b.kv_heads >= 1 && b.kv_heads <= 1024, "kv_heads", [&] {
    return "must be in [1, 1024] for the device planner (got " + std::to_string(b.kv_heads) + ")";
  });
  require(b.workers >= 1 && b.workers <= 65536, "workers", [&] {
    return "must be in [1, 65536] for the device planner (got " + std::to_string(b.workers) + ")";
  });
  const auto batch = static_cast<std::size_t>(b.batch);
  const auto workers = static_cast<std::size_t>(b.workers) + 1;
  PlannerLayout l;
  std::size_t at = 0;
  auto take = [&](std::size_t& field, std::size_t bytes) {
    field = at;
    at = align16(at + bytes);
  };
  take(l.totals, 4 * 4);
  take(l.worker_offsets, workers * 4);
  take(l.seq_lens, batch * 4);
  take(l.reductions, static_cast<std::size_t>(b.max_reductions()) * sizeof(DeviceReduction));
  take(l.segments, static_cast<std::size_t>(b.max_segments()) * sizeof(DeviceSegment));
  l.plan_bytes = at;
  take(l.tiles, batch * 4);
  take(l.before, (batch + 1) * 8);
  take(l.counts, workers * 4);
  take(l.cuts, workers * 4);
  take(l.firsts, workers * 4);
  take(l.cuts_before, workers * 4);
  take(l.firsts_before, workers * 4);
  take(l.refused, 4);
  l.bytes = at;
  return l;
}

PlannerParams planner_params(const PlannerBounds& bounds, void* base, const std::int32_t* seq_lens,
                             std::int32_t max_seq_len, std::int32_t tile_tokens, std::int32_t q_len,
                             std::int32_t window_left) {
  const PlannerLayout l = planner_layout(bounds);
  auto* bytes = static_cast<std::byte*>(base);
  auto i32 = [&](std::size_t at) { return reinterpret_cast<std::int32_t*>(bytes + at); };
  PlannerParams p{};
  p.seq_lens = seq_lens;
  p.batch = bounds.batch;
  p.kv_heads = bounds.kv_heads;
  p.workers = bounds.workers;
  p.tile_tokens = tile_tokens;
  p.q_len = q_len;
  p.window_left = window_left;
  p.max_seq_len = max_seq_len;
  p.tiles = i32(l.tiles);
  p.before = reinterpret_cast<std::int64_t*>(bytes + l.before);
  p.counts = i32(l.counts);
  p.cuts = i32(l.cuts);
  p.firsts = i32(l.firsts);
  p.cuts_before = i32(l.cuts_before);
  p.firsts_before = i32(l.firsts_before);
  p.worker_offsets = i32(l.worker_offsets);
  p.segments = reinterpret_cast<DeviceSegment*>(bytes + l.segments);
  p.reductions = reinterpret_cast<DeviceReduction*>(bytes + l.reductions);
  p.totals = i32(l.totals);
  p.refused = i32(l.refused);
  p.max_segments = static_cast<std::int32_t>(bounds.max_segments());
  p.max_reductions = bounds.max_reductions();
  return p;
}

}  // namespace leanattn::cuda
