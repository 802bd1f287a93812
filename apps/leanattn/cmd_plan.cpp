// `leanattn plan`: prints the plan of a decode problem as text (with a picture) or JSON.
#include <fmt/core.h>

#include "commands.hpp"
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
  CLI::App* cmd = app.add_subcommand("plan", "print the plan of a decode problem");
  args->problem.add_shape_flags(*cmd);
  args->problem.add_plan_flags(*cmd);
  args->problem.workers = 1;
  cmd->add_option("--strategy", args->strategy, "lean, split or head");
  cmd->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args] {
    const int rc = run_guarded("plan", [&] {
      const DecodeProblem p = args->problem.problem();
      const Strategy s = parse_strategy(args->strategy, "strategy");
      const Plan plan = make_plan(p, {args->problem.workers}, args->problem.plan_options(s));
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
