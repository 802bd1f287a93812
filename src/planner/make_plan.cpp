// make_plan(): validates the inputs, picks the tile size and the split count, deals the tiles
// with the chosen strategy and assembles the plan.
#include <algorithm>
#include <string>
#include <vector>

#include "leanattn/core/variant_rules.hpp"
#include "leanattn/error.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/planner.hpp"
#include "pieces.hpp"

namespace leanattn {

namespace {

void validate_options(const Hardware& hw, const PlanOptions& opt) {
  validate_workers(hw.workers);
  require(opt.tile_tokens >= 0 && opt.tile_tokens <= kMaxTileTokens, "tile", [&] {
    return "must be in [1, " + std::to_string(kMaxTileTokens) +
           "] tokens, or 0 for the default (got " + std::to_string(opt.tile_tokens) + ")";
  });
  require(opt.splits >= 0 && opt.splits <= kMaxSplits, "splits", [&] {
    return "must be in [1, " + std::to_string(kMaxSplits) + "], or 0 for the heuristic (got " +
           std::to_string(opt.splits) + ")";
  });
  require(opt.splits == 0 || opt.strategy == Strategy::split, "splits",
          [] { return "applies to the split strategy only"; });
  require(opt.chunk_tiles >= 0 && opt.chunk_tiles <= kMaxTileTokens, "chunk_tiles", [&] {
    return "must be in [1, " + std::to_string(kMaxTileTokens) + "], or 0 for the default (got " +
           std::to_string(opt.chunk_tiles) + ")";
  });
  require(!opt.batch_invariant || opt.strategy == Strategy::lean, "batch_invariant",
          [] { return "applies to the lean strategy only"; });
  require(opt.split_rule == SplitRule::automatic || opt.strategy == Strategy::split, "split_rule",
          [] { return "applies to the split strategy only"; });
}

}  // namespace

std::vector<std::vector<std::int64_t>> lean_tile_costs(const DecodeProblem& p,
                                                       std::int32_t tile_tokens) {
  if (!p.has_query_start_loc()) return {};
  const DType v = p.value_dtype();
  const std::int64_t kv_row =
      row_units(p.kv_dtype, p.head_dim) * static_cast<std::int64_t>(dtype_size(p.kv_dtype)) +
      row_units(v, p.value_dim()) * static_cast<std::int64_t>(dtype_size(v));
  std::vector<std::vector<std::int64_t>> costs(p.seq_lens.size());
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    const std::int32_t n = p.query_len(b);
    const std::int64_t len = p.seq_lens[static_cast<std::size_t>(b)];
    if (n == 0) continue;  // plans no tile
    const TileQueries queries{len, n, p.variant.causal, p.variant.window_left};
    for (std::int64_t t0 = first_planned_key(len, n, p.variant.window_left); t0 < len;
         t0 += tile_tokens) {
      costs[static_cast<std::size_t>(b)].push_back(
          tile_cost(queries, t0, std::min(t0 + tile_tokens, len), p.group_size(), kv_row,
                    p.head_dim, p.value_dim()));
    }
  }
  return costs;
}

PlanOptions resolve_plan_options(const PlanOptions& options, PlanTarget target) {
  PlanOptions o = options;
  const bool cpu = target == PlanTarget::cpu;
  // CPU: whole token rows per worker, for every strategy (its prefetchers stream them;
  // docs/cpu-engine.md). GPU: the paper's line, one pair at a time per CTA.
  if (o.order == LineOrder::automatic)
    o.order = cpu ? LineOrder::token_major : LineOrder::head_major;
  // Split counts for a few equal cores, or for GPU waves (heuristics.hpp).
  if (o.strategy == Strategy::split && o.split_rule == SplitRule::automatic) {
    o.split_rule = cpu ? SplitRule::even_workers : SplitRule::fa2_waves;
  }
  return o;
}

Plan make_plan(const DecodeProblem& problem, const Hardware& hardware,
               const PlanOptions& requested) {
  validate(problem);
  validate_options(hardware, requested);
  const PlanOptions options = resolve_plan_options(requested, PlanTarget::gpu);

  Plan plan;
  plan.strategy = options.strategy;
  plan.workers = hardware.workers;
  plan.tile_tokens = options.tile_tokens > 0
                         ? options.tile_tokens
                         : default_tile_tokens(problem.head_dim, problem.value_dim());
  plan.kv_heads = problem.kv_heads;
  plan.group_size = problem.group_size() * problem.q_len;
  plan.head_dim = problem.head_dim;
  plan.head_dim_v = problem.value_dim();
  plan.seq_lens = problem.seq_lens;
  plan.q_len = problem.q_len;
  plan.query_start_loc = problem.query_start_loc;
  plan.variant = problem.variant;

  // Keys each request plans, [first_key, seq_len): a window leaves out the keys no row sees, so
  // lean balances the work that exists.
  std::vector<std::int32_t> planned(problem.seq_lens.size());
  for (std::size_t b = 0; b < planned.size(); ++b) {
    const auto r = static_cast<std::int32_t>(b);
    planned[b] = static_cast<std::int32_t>(plan.seq_lens[b] - plan.first_key(r));
  }
  const planner::TileCosts costs = lean_tile_costs(problem, plan.tile_tokens);
  const planner::PairLine line =
      planner::make_pair_line(planned, problem.kv_heads, plan.tile_tokens, costs);
  plan.total_tiles = line.total();
  const std::int64_t max_tiles =
      line.tiles.empty() ? 0 : *std::max_element(line.tiles.begin(), line.tiles.end());

  plan.order = options.order;
  const bool rows = plan.order == LineOrder::token_major;
  planner::WorkerPieces pieces;
  switch (options.strategy) {
    case Strategy::lean: {
      if (options.batch_invariant) {
        plan.batch_invariant = true;
        plan.chunk_tiles = options.chunk_tiles > 0 ? options.chunk_tiles : kDefaultChunkTiles;
        pieces = rows ? planner::chunked_partition_rows(planned, problem.kv_heads, plan.tile_tokens,
                                                        plan.workers, plan.chunk_tiles)
                      : planner::chunked_partition(line, plan.workers, plan.chunk_tiles);
      } else {
        pieces = rows ? planner::lean_partition_rows(planned, problem.kv_heads, plan.tile_tokens,
                                                     plan.workers, costs)
                      : planner::lean_partition(line, plan.workers);
      }
      break;
    }
    case Strategy::split: {
      const bool even = options.split_rule == SplitRule::even_workers;
      plan.splits = options.splits > 0 ? options.splits
                    : even ? cpu_num_splits(problem.batch(), plan.workers, max_tiles, kMaxSplits)
                           : fa2_num_splits(line.pairs(), plan.workers, max_tiles, kMaxSplits);
      // FA2 sizes every split from the longest request: ceil(max_tiles / splits) tiles each.
      const std::int64_t chunk =
          std::max<std::int64_t>(1, ceil_div<std::int64_t>(max_tiles, plan.splits));
      pieces = rows ? planner::contiguous_rows(planned, problem.kv_heads, plan.tile_tokens,
                                               plan.workers, chunk)
                    : planner::list_schedule(line, plan.workers, chunk);
      break;
    }
    case Strategy::head: {
      const std::int64_t whole = std::max<std::int64_t>(1, max_tiles);
      pieces = rows ? planner::contiguous_rows(planned, problem.kv_heads, plan.tile_tokens,
                                               plan.workers, whole)
                    : planner::list_schedule(line, plan.workers, whole);
      break;
    }
  }
  planner::assemble_plan(plan, pieces);
  return plan;
}

void check_plan_matches(const Plan& plan, const DecodeProblem& problem) {
  require(plan.kv_heads == problem.kv_heads &&
              plan.group_size == problem.group_size() * problem.q_len &&
              plan.head_dim == problem.head_dim && plan.head_dim_v == problem.value_dim(),
          "plan", [] {
            return "was made for other head counts, head_dim or head_dim_v than this problem";
          });
  require(plan.seq_lens == problem.seq_lens, "plan",
          [] { return "was made for other seq_lens than this problem"; });
  require(plan.q_len == problem.q_len, "plan", [&] {
    return "was made for q_len = " + std::to_string(plan.q_len) + ", not " +
           std::to_string(problem.q_len);
  });
  require(plan.query_start_loc == problem.query_start_loc, "plan",
          [] { return "was made for other query_start_loc than this problem"; });
  const AttentionVariant& a = plan.variant;
  const AttentionVariant& b = problem.variant;
  require(a == b, "plan", [&] {
    auto text = [](const AttentionVariant& v) {
      return "causal=" + std::to_string(v.causal) +
             " window_left=" + std::to_string(v.window_left) +
             " softcap=" + std::to_string(v.softcap) + " sinks=" + std::to_string(v.sinks) +
             " alibi=" + std::to_string(v.alibi) + " bias=" + std::to_string(v.bias);
    };
    return "was made for the variant (" + text(a) + "), not (" + text(b) + ")";
  });
}

}  // namespace leanattn
