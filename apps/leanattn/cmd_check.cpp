// `leanattn check`: random problems through every strategy against the fp64 reference (on every
// SIMD target this CPU runs, in turn; one case in 25 with a long request of up to --long-len
// tokens), the bad-input catalogue, and the determinism / batch-invariance properties. Prints each
// failure with the command that replays it and ends with "N passed, N failed"; exit code 1 on
// failure.
#include <fmt/core.h>

#include <memory>

#include "checks/bad_inputs.hpp"
#include "checks/kernel_checks.hpp"
#include "checks/random_checks.hpp"
#include "commands.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/executor_cache.hpp"
#include "problem_args.hpp"

namespace leanattn::cli {

namespace {

struct CheckArgs {
  std::int64_t count = 100;
  std::uint64_t seed = 1;
  std::int64_t only = -1;  // replay one case
  std::string backend = "cpu";
  std::string simd = "all";
  std::int32_t max_len = 700;
  std::int32_t long_len = 65536;
  std::int32_t workers = 0;         // cuda-emulated: CTAs (0: the drawn worker count)
  std::uint64_t schedule_seed = 1;  // cuda-emulated: thread and CTA scheduling
  bool verbose = false;
};

int run_check(const CheckArgs& a) {
  // cpu: the CPU engine's checks below; any other name: a kernel backend (kernel_checks.hpp).
  std::unique_ptr<checks::KernelBackend> kernel;
  if (a.backend != "cpu") {
    kernel = checks::make_kernel_backend(a.backend, {a.workers, a.schedule_seed});
  }
  require(a.count >= 1, "count",
          [&] { return "must be >= 1 (got " + std::to_string(a.count) + ")"; });
  require(a.max_len >= 1, "max_len",
          [&] { return "must be >= 1 (got " + std::to_string(a.max_len) + ")"; });
  require(a.long_len >= 0 && a.long_len <= (1 << 20), "long_len",
          [&] { return "must be in [0, 1048576] (got " + std::to_string(a.long_len) + ")"; });
  ExecutorCache executors(checks::kKeptExecutors);
  harness::RandomLimits limits;
  limits.max_len = a.max_len;
  limits.max_workers = 64;
  limits.any_head_dim = true;
  limits.bias = kernel == nullptr;      // the CUDA kernels do not take a bias yet
  limits.block_kv = kernel == nullptr;  // nor ggml's block formats
  // K and V of different widths: kernel_case() moves them to the kernels' DeepSeek widths.
  // One case in 25 draws a long request among short ones; fewer, narrower heads keep its fp64
  // reference within a second.
  harness::RandomLimits long_limits = limits;
  long_limits.long_len = a.long_len;
  long_limits.max_kv_heads = 2;
  long_limits.max_group = 4;
  long_limits.any_head_dim = false;
  auto limits_of = [&](std::int64_t i) -> const harness::RandomLimits& {
    return i % 25 == 12 && a.long_len > a.max_len ? long_limits : limits;
  };
  std::int64_t passed = 0, failed = 0;
  auto tally = [&](checks::CaseReport r, std::int64_t index, const char* kind) {
    const std::string target = kernel ? "" : checks::cpu_options_for_case(a.simd, index).simd;
    if (!target.empty()) r.problem += " simd " + target;
    for (const auto& o : r.outcomes) {
      if (o.ok) {
        ++passed;
        if (a.verbose) {
          fmt::print("ok    {} #{} {} on {}: {}\n", kind, index, o.what, r.problem, o.detail);
        }
        continue;
      }
      ++failed;
      fmt::print(
          "FAIL  {} #{} {} on {}\n      {}\n      replay: leanattn check --seed {} --only {}{}\n",
          kind, index, o.what, r.problem, o.detail, a.seed, index,
          a.backend == "cpu" ? std::string() : " --backend " + a.backend);
    }
  };
  const std::int64_t first = a.only >= 0 ? a.only : 0;
  const std::int64_t last = a.only >= 0 ? a.only + 1 : a.count;
  for (std::int64_t i = first; i < last; ++i) {
    if (kernel) {
      tally(checks::kernel_case(a.seed, i, limits, *kernel), i, a.backend.c_str());
      continue;
    }
    const ExecutorOptions cpu = checks::cpu_options_for_case(a.simd, i);
    tally(checks::random_strategies_case(a.seed, i, limits_of(i), executors, cpu), i, "random");
    if (i % 10 == 0 || a.only >= 0)
      tally(checks::reproducibility_case(a.seed, i, executors, cpu), i, "repro");
    if (a.only < 0 && (i + 1) % 100 == 0) {
      fmt::print(stderr, "  {} / {} cases ({} failed so far)\n", i + 1, a.count, failed);
    }
  }
  if (a.only < 0 && !kernel) {
    // The catalogue calls cpu::Engine's own API (a caller-owned workspace among it).
    cpu::Engine engine({.workers = 2, .simd = checks::cpu_options_for_case(a.simd, 0).simd});
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
  cmd->add_option("--backend", args->backend,
                  "cpu, cuda-emulated (the CUDA kernel's source on the CPU emulator), or cuda when "
                  "built");
  cmd->add_option("--workers", args->workers,
                  "cuda-emulated: CTAs of the plan (default: the drawn worker count; give a GPU "
                  "run's count to replay it)");
  cmd->add_option("--schedule-seed", args->schedule_seed,
                  "cuda-emulated: seed of the thread and CTA scheduling");
  cmd->add_option("--simd", args->simd,
                  "CPU SIMD target, or all: every target this CPU runs, 10 cases each in turn "
                  "(default)");
  cmd->add_option("--max-len", args->max_len, "longest request drawn, in tokens");
  cmd->add_option("--long-len", args->long_len,
                  "longest request of the long cases (one in 25), in tokens; <= --max-len: none");
  cmd->add_flag("--verbose", args->verbose, "print passing checks too");
  cmd->callback([args] {
    const int rc = run_guarded("check", [&] { return run_check(*args); });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
