// make_plan(): the pure host-side planner (no threads, no CUDA). Turns a decode problem and the
// worker count into a Plan (plan.hpp). Called by the executors' convenience entry points, the
// CLI and the Python bindings; the heuristics it uses are in heuristics.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "leanattn/hardware.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/problem.hpp"

namespace leanattn {

// How the split strategy picks its split count when PlanOptions::splits is 0 (heuristics.hpp).
enum class SplitRule : std::uint8_t {
  automatic,     // the executor's choice (resolve_plan_options)
  fa2_waves,     // FlashAttention-2's wave-efficiency rule (fa2_num_splits), for GPUs
  even_workers,  // the fewest splits that share the units evenly over the workers (cpu_num_splits)
};

struct PlanOptions {
  Strategy strategy = Strategy::lean;
  // How the tiles are walked (automatic: the executor's, resolve_plan_options). lean: the order of
  // the line cut into ranges; split, head: head_major deals the units in pair order to the first
  // free worker (a GPU's block scheduler), token_major deals them contiguously in token-row order.
  LineOrder order = LineOrder::automatic;
  std::int32_t tile_tokens =
      0;  // lean-tile size in tokens; 0: default_tile_tokens(head_dim, head_dim_v)
  std::int32_t splits = 0;  // split only: splits per pair; 0: FA2 wave-efficiency heuristic
  // lean only: batch-invariant mode. Each request is cut into fixed chunks of chunk_tiles tiles
  // (0: kDefaultChunkTiles) that depend on its own length alone; chunks are dealt to workers
  // whole and merged in chunk order, so a request's output is bitwise identical whatever else is
  // in the batch and whatever the worker count.
  bool batch_invariant = false;
  std::int32_t chunk_tiles = 0;
  SplitRule split_rule = SplitRule::automatic;  // split only, when splits is 0

  bool operator==(const PlanOptions&) const = default;  // ExecutorCache's plan memo
};

inline constexpr std::int32_t kMaxTileTokens = 1 << 16;
inline constexpr std::int32_t kMaxSplits = 128;
inline constexpr std::int32_t kDefaultChunkTiles = 16;

// The kinds of executor a plan is made for: each has its preferred line order and split rule.
enum class PlanTarget : std::uint8_t {
  gpu,  // head_major (a CTA works on one pair at a time), SplitRule::fa2_waves
  cpu,  // token_major (whole token rows per core, contiguous pairs), SplitRule::even_workers
};

// `options` with LineOrder::automatic and SplitRule::automatic (split only) resolved for
// `target`, the rest unchanged: the one place `automatic` is decided. Every executor plans with
// it (cpu::Engine, cuda::Engine, the emulator); make_plan() resolves for PlanTarget::gpu.
PlanOptions resolve_plan_options(const PlanOptions& options, PlanTarget target);

// Validates `problem`, `hardware` and `options` (throws Error) and returns the plan
// (`automatic` resolved for PlanTarget::gpu).
Plan make_plan(const DecodeProblem& problem, const Hardware& hardware,
               const PlanOptions& options = {});

// The cost of each lean tile of `tile_tokens` keys that lean (not batch-invariant) cuts
// `problem`'s line by: costs[b][t] = tile_cost() (heuristics.hpp) of request b's tile t (its
// planned keys [first key, seq_len) in tiles, Plan::tile_keys) for a mixed batch
// (query_start_loc); empty otherwise (every tile alike).
std::vector<std::vector<std::int64_t>> lean_tile_costs(const DecodeProblem& problem,
                                                       std::int32_t tile_tokens);

// Throws Error("plan", ...) unless `plan` was made for `problem`'s shape and lengths.
void check_plan_matches(const Plan& plan, const DecodeProblem& problem);

}  // namespace leanattn
