// A step's plan made on the host into the fixed buffers a captured decode reads (issue 33,
// deliverable 0; FlashInfer's plan/run): the serving loop knows the lengths on the host, plans
// them each step and copies the plan asynchronously into the device planner's plan region
// (planner_buffers.hpp), whose size is fixed by the capture's bounds; the decode kernel captured
// once reads it at every replay. Pure host code: the CUDA engine (HostPlannedStep) and the
// emulator (EmulatedCapturedStep::plan_on_host) use the same two functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cuda/device/planner_buffers.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::cuda {

// The tile every plan of a captured step uses: options.tile_tokens, or the default for the
// shape's widths (a length-dependent tile would change the plan's shape). Throws Error naming
// query_start_loc for a shape with one (require_one_q_len: a step, and the device planner, take
// one q_len for every request), strategy, batch_invariant, order or tile for options such a step
// does not plan (lean, head-major only; `who` names the step in the message).
std::int32_t fixed_step_tile(const DecodeProblem& shape, const PlanOptions& options,
                             const char* who);

// The plan of one step: `shape` (the capture's: its batch the capacity, its longest request the
// bound) with `seq_lens` [<= capacity] as its lengths, requests past them at length 0; lean,
// head-major, `workers` and `tile_tokens` fixed (the plans the device planner makes). Throws
// Error naming seq_lens when there are more lengths than the capacity or a length is negative,
// above the bound or in [1, q_len).
Plan plan_step(const DecodeProblem& shape, std::span<const std::int32_t> seq_lens,
               std::int32_t workers, std::int32_t tile_tokens);

// Writes `plan` into `region`, a host image of the plan region of planner_layout(bounds)
// (layout.plan_bytes bytes), as the device planner would (totals, worker offsets, lengths,
// reductions, segments); returns how many bytes from its start hold the plan (one copy moves
// them; the segments past the plan's are not read). Throws Error("plan", ...) when the plan
// does not fit the bounds (another worker count, batch or kv_heads, more segments, reductions or
// slots than they hold).
std::size_t write_plan_region(const Plan& plan, const PlannerBounds& bounds,
                              std::span<std::byte> region);

}  // namespace leanattn::cuda
