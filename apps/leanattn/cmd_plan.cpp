// `leanattn plan`: prints, as text (with a picture) or JSON, the plan the CPU engine runs for a
// decode problem: its line order and split rule for `automatic` (cpu_plan_options: token-major,
// CPU split counts), and one worker per core unless --workers says otherwise. `--order
// head_major` shows the GPU's order. A mixed batch's plan (--query-lens) also shows each
// worker's cost (lean_tile_costs: what the lean cut balances).
#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "commands.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/plan_format.hpp"
#include "leanattn/planner.hpp"
#include "plan_json.hpp"
#include "problem_args.hpp"

namespace leanattn::cli {

namespace {

struct PlanArgs {
  ProblemArgs problem;
  std::string strategy = "lean";
  std::string format = "text";
};

// Each worker's summed tile costs (lean_tile_costs) of a mixed batch's plan; empty otherwise.
std::vector<std::int64_t> worker_costs(const DecodeProblem& p, const Plan& plan) {
  const std::vector<std::vector<std::int64_t>> costs = lean_tile_costs(p, plan.tile_tokens);
  if (costs.empty()) return {};
  std::vector<std::int64_t> out(static_cast<std::size_t>(plan.workers), 0);
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    for (const Segment& s : plan.worker_segments(w)) {
      const std::vector<std::int64_t>& tiles = costs[static_cast<std::size_t>(s.request)];
      for (std::int32_t t = s.tile_begin; t < s.tile_end; ++t) {
        out[static_cast<std::size_t>(w)] += tiles[static_cast<std::size_t>(t)];
      }
    }
  }
  return out;
}

std::string worker_costs_text(const std::vector<std::int64_t>& costs) {
  if (costs.empty()) return "";
  const auto [lo, hi] = std::minmax_element(costs.begin(), costs.end());
  const std::string ratio =
      *lo > 0 ? fmt::format("{:.3f}", static_cast<double>(*hi) / static_cast<double>(*lo))
              : std::string("n/a (an idle worker)");
  std::string text = fmt::format(
      "cost per worker (tile_cost: max(bytes x {}, FMAs), what lean balances): most / least {}\n",
      kFmasPerKvByte, ratio);
  for (std::size_t w = 0; w < costs.size(); ++w) {
    text += fmt::format("  worker {}: {}\n", w, costs[w]);
  }
  return text;
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd =
      app.add_subcommand("plan", "print the plan the CPU engine runs for a decode problem");
  args->problem.add_shape_flags(*cmd);
  args->problem.add_plan_flags(*cmd);
  cmd->add_option("--strategy", args->strategy, "lean, split or head");
  cmd->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args] {
    const int rc = run_guarded("plan", [&] {
      const DecodeProblem p = args->problem.problem();
      const Strategy s = parse_strategy(args->strategy, "strategy");
      const Plan plan = make_plan(p, {resolve_workers(args->problem.workers)},
                                  cpu::cpu_plan_options(args->problem.plan_options(s)));
      const std::vector<std::int64_t> costs = worker_costs(p, plan);
      if (args->format == "json") {
        nlohmann::json j = plan_to_json(plan);
        if (!costs.empty()) j["worker_cost"] = costs;
        fmt::print("{}\n", j.dump(2));
      } else {
        fmt::print("{}{}", format_plan_text(plan), worker_costs_text(costs));
      }
      return 0;
    });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
