// `leanattn`: the command-line tool. Subcommands: plan (print the plan the CPU engine runs),
// bench (time strategies against the memory-bandwidth limit) and check (random correctness).
// Exit codes: 0 success, 1 a check failed or an internal error, 2 bad arguments.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "leanattn/version.hpp"
#include "option_rules.hpp"

int main(int argc, char** argv) {
  CLI::App app{"leanattn: LeanAttention decode attention (planner, engines, benchmarks)"};
  app.set_version_flag("--version", "leanattn " + std::string(leanattn::version()));
  app.require_subcommand(1);
  leanattn::cli::add_plan_command(app);
  leanattn::cli::add_bench_command(app);
  leanattn::cli::add_check_command(app);
  leanattn::cli::apply_option_rules(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a subcommand finished with a non-zero status
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, the version, or the parse error with a hint
    return rc == 0 ? 0 : 2;
  }
  return 0;
}
