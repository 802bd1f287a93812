// JSON form of a Plan for `leanattn plan --format json`: workers[i].segments[j] with request,
// kv_head, tile_begin, tile_end (end exclusive), kind and slot; reductions with their slots in
// merge order. Scripts use it to check coverage and to draw plans (bench/plot_results.py).
#pragma once

#include <nlohmann/json.hpp>

#include "leanattn/plan.hpp"

namespace leanattn::cli {

nlohmann::ordered_json plan_to_json(const Plan& plan);

}  // namespace leanattn::cli
