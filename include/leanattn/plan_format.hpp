// Human-readable views of a Plan, for `leanattn plan` and the docs: a per-worker listing of
// segments and reductions, and a picture of workers against lean tiles.
#pragma once

#include <string>

#include "leanattn/plan.hpp"

namespace leanattn {

// Header, one block per worker (its segments: request, KV head, tile range, kind, slot), then the
// reductions with their merge order, then the picture.
std::string format_plan_text(const Plan& plan);

// One row per worker, one character per tile (or per group of tiles when the busiest worker has
// more than `width` tiles): the letter of the pair (legend below the picture), upper case for a
// direct or finalise segment, lower case for a partial one, blank where the worker is idle.
std::string format_plan_picture(const Plan& plan, int width = 64);

}  // namespace leanattn
