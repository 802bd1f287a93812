// Text and picture views of a plan (see plan_format.hpp).
#include "leanattn/plan_format.hpp"

#include <algorithm>
#include <sstream>

#include "leanattn/plan.hpp"

namespace leanattn {

namespace {

std::string tiles_text(const Segment& s) {
  return "[" + std::to_string(s.tile_begin) + ", " + std::to_string(s.tile_end) + ")";
}

char pair_letter(std::int64_t pair) {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  return kLetters[pair % 36];
}

}  // namespace

std::string format_plan_text(const Plan& plan) {
  std::ostringstream os;
  std::int64_t lo = plan.total_tiles, hi = 0;
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    lo = std::min(lo, plan.worker_tiles(w));
    hi = std::max(hi, plan.worker_tiles(w));
  }
  os << "strategy " << strategy_name(plan.strategy);
  if (plan.strategy == Strategy::split) os << " (" << plan.splits << " splits per pair)";
  os << " (" << line_order_name(plan.order) << ")";
  if (plan.batch_invariant) os << " (batch-invariant, " << plan.chunk_tiles << " tiles per chunk)";
  os << ", " << plan.workers << (plan.workers == 1 ? " worker" : " workers") << ", tile "
     << plan.tile_tokens << " tokens\n";
  os << "problem: " << plan.batch() << " requests x " << plan.kv_heads << " kv_heads, "
     << plan.group_size << (plan.query_start_loc.empty() ? "" : " (at most)")
     << " query rows per kv_head, head_dim " << plan.head_dim;
  if (plan.head_dim_v != plan.head_dim) os << ", head_dim_v " << plan.head_dim_v;
  os << ", seq_lens";
  for (std::size_t b = 0; b < plan.seq_lens.size() && b < 16; ++b) {
    os << (b ? "," : " ") << plan.seq_lens[b];
  }
  if (plan.seq_lens.size() > 16) os << ",...";
  if (!plan.query_start_loc.empty()) {  // a mixed batch: each request's query tokens
    os << ", query tokens";
    for (std::int32_t b = 0; b < plan.batch() && b < 16; ++b)
      os << (b ? "," : " ") << plan.query_len(b);
    if (plan.batch() > 16) os << ",...";
    os << " (lean cuts by cost: heuristics.hpp, tile_cost)";
  }
  os << "\n";
  os << "tiles: " << plan.total_tiles << " total, " << lo << ".." << hi << " per worker; "
     << plan.reductions.size() << " reductions, " << plan.num_slots << " slots, workspace "
     << workspace_layout(plan).bytes << " bytes\n";
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    const auto segs = plan.worker_segments(w);
    os << "worker " << w << ": " << plan.worker_tiles(w) << " tiles";
    if (segs.empty()) os << ", idle";
    os << "\n";
    for (const Segment& s : segs) {
      os << "  request " << s.request << " kv_head " << s.kv_head << " tiles " << tiles_text(s)
         << " " << segment_kind_name(s.kind);
      if (s.kind == SegmentKind::direct) {
        os << (s.tile_begin == s.tile_end ? " (empty: zeros, lse -inf)" : " (writes output)");
      } else {
        os << " -> slot " << s.slot;
      }
      os << "\n";
    }
  }
  if (!plan.reductions.empty()) os << "reductions (merged in slot order by the last to arrive):\n";
  for (const Reduction& r : plan.reductions) {
    os << "  request " << r.request << " kv_head " << r.kv_head << ": slots " << r.slot_begin
       << ".." << r.slot_begin + r.num_slots - 1 << ", finaliser worker " << r.finaliser << "\n";
  }
  os << format_plan_picture(plan);
  return os.str();
}

std::string format_plan_picture(const Plan& plan, int width) {
  std::int64_t hi = 1;
  for (std::int32_t w = 0; w < plan.workers; ++w) hi = std::max(hi, plan.worker_tiles(w));
  const std::int64_t per_char = std::max<std::int64_t>(1, (hi + width - 1) / width);
  std::ostringstream os;
  os << "picture: one row per worker, one column per " << per_char
     << (per_char == 1 ? " tile" : " tiles")
     << "; letter = pair, UPPER = direct or finalise, lower = partial\n";
  std::int64_t shown = 0;
  for (std::int32_t w = 0; w < plan.workers && shown < 64; ++w, ++shown) {
    std::string row;
    std::int64_t col_fill = 0;
    for (const Segment& s : plan.worker_segments(w)) {
      const std::int64_t pair = static_cast<std::int64_t>(s.request) * plan.kv_heads + s.kv_head;
      char c = pair_letter(pair);
      if (s.kind == SegmentKind::partial) c = static_cast<char>(std::tolower(c));
      for (std::int32_t t = s.tile_begin; t < s.tile_end; ++t) {
        if (col_fill == 0) row.push_back(c);
        col_fill = (col_fill + 1) % per_char;
      }
    }
    os << "  w" << w << (w < 10 ? "  " : (w < 100 ? " " : "")) << "|" << row
       << std::string(
              static_cast<std::size_t>(std::max<std::int64_t>(
                  0, (hi + per_char - 1) / per_char - static_cast<std::int64_t>(row.size()))),
              ' ')
       << "|\n";
  }
  if (plan.workers > 64) os << "  ... " << plan.workers - 64 << " more workers\n";
  os << "legend:";
  const std::int64_t pairs = static_cast<std::int64_t>(plan.batch()) * plan.kv_heads;
  for (std::int64_t p = 0; p < pairs && p < 36; ++p) {
    os << " " << pair_letter(p) << "=r" << p / plan.kv_heads << "h" << p % plan.kv_heads;
  }
  if (pairs > 36) os << " (letters repeat)";
  os << "\n";
  return os.str();
}

}  // namespace leanattn
