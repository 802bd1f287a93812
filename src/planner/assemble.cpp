// assemble_plan(): from dealt pieces to segments, reductions and workspace slots. Shared by
// every strategy, so that the kinds and the merge order follow one rule: a pair done by one
// piece is direct; otherwise its pieces, in tile order, fill consecutive slots, the first piece
// is the finalise segment and the others are partial.
#include <algorithm>
#include <tuple>

#include "pieces.hpp"

namespace leanattn::planner {

void assemble_plan(Plan& plan, const WorkerPieces& pieces) {
  const std::int32_t kv_heads = plan.kv_heads;
  plan.worker_offsets.assign(1, 0);
  plan.segments.clear();
  std::vector<std::int64_t> segment_pair;
  std::int64_t pairs = static_cast<std::int64_t>(plan.batch()) * kv_heads;
  std::vector<std::int32_t> pieces_of_pair(static_cast<std::size_t>(pairs), 0);
  for (const auto& list : pieces) {
    for (const Piece& pc : list) {
      Segment s;
      s.request = static_cast<std::int32_t>(pc.pair / kv_heads);
      s.kv_head = static_cast<std::int32_t>(pc.pair % kv_heads);
      s.tile_begin = pc.tile_begin;
      s.tile_end = pc.tile_end;
      plan.segments.push_back(s);
      segment_pair.push_back(pc.pair);
      ++pieces_of_pair[static_cast<std::size_t>(pc.pair)];
    }
    plan.worker_offsets.push_back(static_cast<std::int64_t>(plan.segments.size()));
  }

  // Segments of split pairs, ordered by (pair, first tile): that is the merge order.
  std::vector<std::int64_t> order;
  for (std::size_t i = 0; i < plan.segments.size(); ++i) {
    if (pieces_of_pair[static_cast<std::size_t>(segment_pair[i])] > 1) {
      order.push_back(static_cast<std::int64_t>(i));
    }
  }
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return std::tie(segment_pair[a], plan.segments[a].tile_begin) <
           std::tie(segment_pair[b], plan.segments[b].tile_begin);
  });

  // Worker of each segment, for the reductions' finaliser.
  std::vector<std::int32_t> worker_of(plan.segments.size());
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    for (std::int64_t i = plan.worker_offsets[w]; i < plan.worker_offsets[w + 1]; ++i) {
      worker_of[static_cast<std::size_t>(i)] = w;
    }
  }

  plan.reductions.clear();
  std::int32_t slot = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    Segment& s = plan.segments[static_cast<std::size_t>(order[k])];
    const bool first = k == 0 || segment_pair[order[k - 1]] != segment_pair[order[k]];
    if (first) {
      Reduction r;
      r.request = s.request;
      r.kv_head = s.kv_head;
      r.finaliser = worker_of[static_cast<std::size_t>(order[k])];
      r.slot_begin = slot;
      plan.reductions.push_back(r);
    }
    Reduction& r = plan.reductions.back();
    s.kind = first ? SegmentKind::finalise : SegmentKind::partial;
    s.slot = slot++;
    s.reduction = static_cast<std::int32_t>(plan.reductions.size() - 1);
    ++r.num_slots;
  }
  plan.num_slots = slot;
}

}  // namespace leanattn::planner
