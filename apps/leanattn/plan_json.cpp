// Plan -> JSON (see plan_json.hpp).
#include "plan_json.hpp"

namespace leanattn::cli {

nlohmann::ordered_json plan_to_json(const Plan& plan) {
  nlohmann::ordered_json j;
  j["format_version"] = 1;
  j["strategy"] = std::string(strategy_name(plan.strategy));
  j["order"] = std::string(line_order_name(plan.order));
  j["num_workers"] = plan.workers;
  j["tile_tokens"] = plan.tile_tokens;
  j["splits"] = plan.splits;
  j["batch_invariant"] = plan.batch_invariant;
  j["chunk_tiles"] = plan.chunk_tiles;
  j["kv_heads"] = plan.kv_heads;
  j["group_size"] = plan.group_size;
  j["head_dim"] = plan.head_dim;
  j["head_dim_v"] = plan.head_dim_v;
  j["seq_lens"] = plan.seq_lens;
  j["query_start_loc"] = plan.query_start_loc;  // empty: q_len each
  j["total_tiles"] = plan.total_tiles;
  j["num_slots"] = plan.num_slots;
  j["workspace_bytes"] = workspace_layout(plan).bytes;
  nlohmann::ordered_json workers = nlohmann::ordered_json::array();
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    nlohmann::ordered_json segs = nlohmann::ordered_json::array();
    for (const Segment& s : plan.worker_segments(w)) {
      segs.push_back({{"request", s.request},
                      {"kv_head", s.kv_head},
                      {"tile_begin", s.tile_begin},
                      {"tile_end", s.tile_end},
                      {"kind", std::string(segment_kind_name(s.kind))},
                      {"slot", s.slot}});
    }
    workers.push_back({{"worker", w}, {"tiles", plan.worker_tiles(w)}, {"segments", segs}});
  }
  j["workers"] = std::move(workers);
  nlohmann::ordered_json reductions = nlohmann::ordered_json::array();
  for (const Reduction& r : plan.reductions) {
    nlohmann::ordered_json slots = nlohmann::ordered_json::array();
    for (std::int32_t k = 0; k < r.num_slots; ++k) slots.push_back(r.slot_begin + k);
    reductions.push_back({{"request", r.request},
                          {"kv_head", r.kv_head},
                          {"finaliser", r.finaliser},
                          {"slots", slots}});
  }
  j["reductions"] = std::move(reductions);
  return j;
}

}  // namespace leanattn::cli
