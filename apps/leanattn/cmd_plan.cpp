// `leanattn plan`: prints, as text (with a picture) or JSON, the plan the CPU engine runs for a
// decode problem: its line order and split rule for `automatic` (cpu_plan_options: token-major,
// CPU split counts), and one worker per core unless --workers says otherwise. `--order
// head_major` shows the GPU's order.
#include <fmt/core.h>

#include <string>

#include "commands.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/plan_format.hpp"
#include "plan_json.hpp"
#include "problem_args.hpp"

namespace leanattn::cli {

namespace {

struct PlanArgs {
  ProblemArgs problem;
  std::string strategy = "lean";
  std::string format = "text";
};

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
      if (args->format == "json") {
        fmt::print("{}\n", plan_to_json(plan).dump(2));
      } else {
        fmt::print("{}", format_plan_text(plan));
      }
      return 0;
    });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
