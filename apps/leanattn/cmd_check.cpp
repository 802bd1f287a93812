// `leanattn check`: random problems through every strategy against the fp64 reference, the
// bad-input catalogue, and the determinism / batch-invariance properties. Prints each failure
// with the command that replays it and ends with "N passed, N failed"; exit code 1 on failure.
#include <fmt/core.h>

#include "checks/bad_inputs.hpp"
#include "checks/random_checks.hpp"
#include "commands.hpp"
#include "leanattn/error.hpp"
#include "problem_args.hpp"

namespace leanattn::cli {

namespace {

struct CheckArgs {
  std::int64_t count = 100;
  std::uint64_t seed = 1;
  std::int64_t only = -1;  // replay one case
  std::string backend = "cpu";
  std::string simd;
  std::int32_t max_len = 700;
  bool verbose = false;
};

int run_check(const CheckArgs& a) {
  require(a.backend == "cpu", "backend", [&] {
    return "must be cpu in this build (CUDA engine not built) (got '" + a.backend + "')";
  });
  require(a.count >= 1, "count", [&] { return "must be >= 1 (got " + std::to_string(a.count) + ")"; });
  require(a.max_len >= 1, "max_len",
          [&] { return "must be >= 1 (got " + std::to_string(a.max_len) + ")"; });
  checks::EnginePool engines(a.simd);
  harness::RandomLimits limits;
  limits.max_len = a.max_len;
  limits.max_workers = 64;
  limits.any_head_dim = true;
  std::int64_t passed = 0, failed = 0;
  auto tally = [&](const checks::CaseReport& r, std::int64_t index, const char* kind) {
    for (const auto& o : r.outcomes) {
      if (o.ok) {
        ++passed;
        if (a.verbose) fmt::print("ok    {} #{} {}: {}\n", kind, index, o.what, o.detail);
        continue;
      }
      ++failed;
      fmt::print("FAIL  {} #{} {} on {}\n      {}\n      replay: leanattn check --seed {} --only {}\n",
                 kind, index, o.what, r.problem, o.detail, a.seed, index);
    }
  };
  const std::int64_t first = a.only >= 0 ? a.only : 0;
  const std::int64_t last = a.only >= 0 ? a.only + 1 : a.count;
  for (std::int64_t i = first; i < last; ++i) {
    tally(checks::random_strategies_case(a.seed, i, limits, engines), i, "random");
    if (i % 10 == 0 || a.only >= 0) tally(checks::reproducibility_case(a.seed, i, engines), i, "repro");
    if (a.only < 0 && (i + 1) % 100 == 0) {
      fmt::print(stderr, "  {} / {} cases ({} failed so far)\n", i + 1, a.count, failed);
    }
  }
  if (a.only < 0) {
    cpu::Engine& engine = engines.get(2);
    for (const auto& b : checks::bad_inputs()) {
      const std::string problem = checks::run_bad_input(b, engine);
      if (problem.empty()) {
        ++passed;
        if (a.verbose) fmt::print("ok    bad input: {}\n", b.name);
      } else {
        ++failed;
        fmt::print("FAIL  bad input '{}' ({}): {}\n", b.name, b.argument, problem);
      }
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "random problems, bad inputs and reproducibility against the fp64 reference");
  cmd->add_option("--count", args->count, "random problems (each run with every strategy)");
  cmd->add_option("--seed", args->seed, "seed of the random problems");
  cmd->add_option("--only", args->only, "replay one case index of --seed");
  cmd->add_option("--backend", args->backend, "cpu (or cuda when built)");
  cmd->add_option("--simd", args->simd, "CPU SIMD target (default: best supported)");
  cmd->add_option("--max-len", args->max_len, "longest request drawn, in tokens");
  cmd->add_flag("--verbose", args->verbose, "print passing checks too");
  cmd->callback([args] {
    const int rc = run_guarded("check", [&] { return run_check(*args); });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
