// Plan helpers: names, loads, the workspace layout and the structural checker check_plan().
#include "leanattn/plan.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "leanattn/error.hpp"

namespace leanattn {

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::lean:
      return "lean";
    case Strategy::split:
      return "split";
    case Strategy::head:
      return "head";
  }
  return "?";
}

Strategy parse_strategy(std::string_view text, const char* argument) {
  if (text == "lean") return Strategy::lean;
  if (text == "split") return Strategy::split;
  if (text == "head") return Strategy::head;
  throw Error(argument, "must be one of lean, split, head (got '" + std::string(text) + "')");
}

std::string_view line_order_name(LineOrder o) {
  switch (o) {
    case LineOrder::automatic:
      return "automatic";
    case LineOrder::head_major:
      return "head_major";
    case LineOrder::token_major:
      return "token_major";
  }
  return "?";
}

LineOrder parse_line_order(std::string_view text, const char* argument) {
  if (text == "automatic" || text == "auto") return LineOrder::automatic;
  if (text == "head_major" || text == "head-major") return LineOrder::head_major;
  if (text == "token_major" || text == "token-major") return LineOrder::token_major;
  throw Error(argument, "must be one of automatic, head_major, token_major (got '" +
                            std::string(text) + "')");
}

std::string_view segment_kind_name(SegmentKind k) {
  switch (k) {
    case SegmentKind::direct:
      return "direct";
    case SegmentKind::finalise:
      return "finalise";
    case SegmentKind::partial:
      return "partial";
  }
  return "?";
}

std::int64_t Plan::worker_tiles(std::int32_t worker) const {
  std::int64_t n = 0;
  for (const Segment& s : worker_segments(worker)) n += s.tile_end - s.tile_begin;
  return n;
}

WorkspaceLayout workspace_layout(const Plan& plan) {
  auto align = [](std::int64_t x) { return (x + 63) / 64 * 64; };
  const std::int64_t rows = static_cast<std::int64_t>(plan.num_slots) * plan.group_size;
  WorkspaceLayout w;
  w.o_offset = 0;
  w.m_offset = align(w.o_offset + rows * plan.head_dim_v * 4);
  w.l_offset = align(w.m_offset + rows * 4);
  w.counters_offset = align(w.l_offset + rows * 4);
  w.bytes = align(w.counters_offset + static_cast<std::int64_t>(plan.reductions.size()) * 4);
  return w;
}

namespace {

[[noreturn]] void broken(const std::string& rule) {
  throw Error("plan", rule);
}

std::string where(std::int64_t seg, const Segment& s) {
  return "segment " + std::to_string(seg) + " (request " + std::to_string(s.request) +
         ", kv_head " + std::to_string(s.kv_head) + ", tiles " + std::to_string(s.tile_begin) +
         ".." + std::to_string(s.tile_end) + ")";
}

}  // namespace

void check_plan(const Plan& plan) {
  PlanCheckBuffers buffers;
  check_plan(plan, buffers);
}

void check_plan(const Plan& plan, PlanCheckBuffers& buffers) {
  if (plan.workers < 1) broken("must have at least one worker");
  if (plan.tile_tokens < 1) broken("must have tile_tokens >= 1");
  if (plan.kv_heads < 1 || plan.group_size < 1 || plan.head_dim < 1 || plan.head_dim_v < 1)
    broken("has empty shapes");
  if (!plan.query_start_loc.empty()) {
    const auto& loc = plan.query_start_loc;
    if (loc.size() != plan.seq_lens.size() + 1 || loc.front() != 0 ||
        !std::is_sorted(loc.begin(), loc.end())) {
      broken("query_start_loc must be batch + 1 non-decreasing prefix sums from 0");
    }
  }
  if (plan.worker_offsets.size() != static_cast<std::size_t>(plan.workers) + 1 ||
      plan.worker_offsets.front() != 0 ||
      plan.worker_offsets.back() != static_cast<std::int64_t>(plan.segments.size()) ||
      !std::is_sorted(plan.worker_offsets.begin(), plan.worker_offsets.end())) {
    broken("worker_offsets must run from 0 to the segment count, non-decreasing");
  }
  const std::int64_t pairs = static_cast<std::int64_t>(plan.batch()) * plan.kv_heads;
  // Segment indices grouped by pair, in tile order (in the caller's buffers: executors call this
  // on every run of a plan they did not make).
  std::vector<std::int64_t>& order = buffers.order;
  std::vector<std::int32_t>& worker_of = buffers.worker_of;
  order.resize(plan.segments.size());
  worker_of.resize(plan.segments.size());
  auto pair_of = [&](std::int64_t i) {
    const Segment& s = plan.segments[static_cast<std::size_t>(i)];
    return static_cast<std::int64_t>(s.request) * plan.kv_heads + s.kv_head;
  };
  std::int64_t total = 0;
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    for (std::int64_t i = plan.worker_offsets[w]; i < plan.worker_offsets[w + 1]; ++i) {
      const Segment& s = plan.segments[static_cast<std::size_t>(i)];
      if (s.request < 0 || s.request >= plan.batch() || s.kv_head < 0 ||
          s.kv_head >= plan.kv_heads) {
        broken(where(i, s) + " names a pair outside the problem");
      }
      const std::int32_t n = plan.tiles_of(s.request);
      if (s.tile_begin < 0 || s.tile_end > n || s.tile_begin > s.tile_end ||
          (s.tile_begin == s.tile_end && n != 0)) {
        broken(where(i, s) + " must be a non-empty tile range inside the pair's " +
               std::to_string(n) + " tiles");
      }
      total += s.tile_end - s.tile_begin;
      worker_of[static_cast<std::size_t>(i)] = w;
      order[static_cast<std::size_t>(i)] = i;
    }
  }
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return std::pair(pair_of(a), plan.segments[static_cast<std::size_t>(a)].tile_begin) <
           std::pair(pair_of(b), plan.segments[static_cast<std::size_t>(b)].tile_begin);
  });
  if (total != plan.total_tiles) broken("total_tiles must equal the tiles of all segments");

  std::vector<char>& slot_used = buffers.slot_used;
  slot_used.assign(static_cast<std::size_t>(std::max(plan.num_slots, 0)), 0);
  std::int64_t reductions_seen = 0;
  std::size_t cursor = 0;
  for (std::int64_t p = 0; p < pairs; ++p) {
    const std::size_t first = cursor;
    while (cursor < order.size() && pair_of(order[cursor]) == p) ++cursor;
    const std::span<const std::int64_t> segs(order.data() + first, cursor - first);
    if (segs.empty()) {
      broken("pair (request " + std::to_string(p / plan.kv_heads) + ", kv_head " +
             std::to_string(p % plan.kv_heads) + ") has no segment: its output is never written");
    }
    std::int32_t next = 0;
    for (std::int64_t i : segs) {
      const Segment& s = plan.segments[static_cast<std::size_t>(i)];
      if (s.tile_begin != next) broken(where(i, s) + " leaves a gap or overlaps in its pair");
      next = s.tile_end;
    }
    if (next != plan.tiles_of(static_cast<std::int32_t>(p / plan.kv_heads))) {
      broken("pair " + std::to_string(p) + " is not covered to its last tile");
    }
    if (segs.size() == 1) {
      const Segment& s = plan.segments[static_cast<std::size_t>(segs[0])];
      if (s.kind != SegmentKind::direct || s.slot != -1 || s.reduction != -1) {
        broken(where(segs[0], s) + " is its pair's only segment, so it must be direct");
      }
      continue;
    }
    const Segment& head = plan.segments[static_cast<std::size_t>(segs[0])];
    if (head.reduction < 0 || head.reduction >= static_cast<std::int32_t>(plan.reductions.size())) {
      broken(where(segs[0], head) + " must name the reduction of its split pair");
    }
    const Reduction& r = plan.reductions[static_cast<std::size_t>(head.reduction)];
    if (r.request != head.request || r.kv_head != head.kv_head ||
        r.num_slots != static_cast<std::int32_t>(segs.size()) ||
        r.finaliser != worker_of[static_cast<std::size_t>(segs[0])] || r.slot_begin < 0 ||
        r.slot_begin + r.num_slots > plan.num_slots) {
      broken("reduction " + std::to_string(head.reduction) + " does not match its pair's segments");
    }
    ++reductions_seen;
    for (std::size_t k = 0; k < segs.size(); ++k) {
      const Segment& s = plan.segments[static_cast<std::size_t>(segs[k])];
      const SegmentKind want = k == 0 ? SegmentKind::finalise : SegmentKind::partial;
      if (s.kind != want || s.reduction != head.reduction ||
          s.slot != r.slot_begin + static_cast<std::int32_t>(k)) {
        broken(where(segs[k], s) + " must be " + std::string(segment_kind_name(want)) +
               " with slot " + std::to_string(r.slot_begin + static_cast<std::int32_t>(k)));
      }
      if (slot_used[static_cast<std::size_t>(s.slot)]++) {
        broken("slot " + std::to_string(s.slot) + " is written twice");
      }
    }
  }
  if (reductions_seen != static_cast<std::int64_t>(plan.reductions.size())) {
    broken("has reductions that no split pair uses");
  }
  for (std::size_t i = 0; i < slot_used.size(); ++i) {
    if (!slot_used[i]) broken("slot " + std::to_string(i) + " is never written");
  }
}

}  // namespace leanattn
