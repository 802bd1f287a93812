// `leanattn bench`: times every strategy against a read-bandwidth probe measured in the same
// run, checks each against the fp64 reference on a sample, and prints a table (plus --json and
// --csv). With no shape flags it runs the default sweep (default_sweep.hpp).
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "bench_report.hpp"
#include "bench_runner/bench_backend.hpp"
#include "commands.hpp"
#include "default_sweep.hpp"
#include "leanattn/error.hpp"
#include "problem_args.hpp"

namespace leanattn::cli {

namespace {

struct BenchArgs {
  ProblemArgs problem;
  std::string backend = "cpu";
  std::vector<std::string> strategies = {"lean", "split", "head"};
  bool invariant = false;
  bool head_major = false;
  bool check_all_rows = false;
  std::int32_t repeat = 0;  // 0: 10 for one case, 7 per case in the sweep
  std::string simd;
  std::string json_path, csv_path;
  std::int64_t probe_mib = 0;
  bool no_pin = false;
};

const char* const kShapeFlags[] = {"--batch",   "--q-heads",   "--kv-heads", "--head-dim",
                                   "--seq-len", "--seq-lens",  "--dtype",    "--page-size",
                                   "--q-len",   "--window",    "--softcap",  "--sinks",
                                   "--alibi",   "--non-causal"};

int run_bench(const BenchArgs& a, bool sweep) {
  const std::unique_ptr<bench::BenchBackend> backend = bench::make_bench_backend(a.backend);
  bench::BenchConfig cfg;
  cfg.strategies.clear();
  for (const auto& s : a.strategies) cfg.strategies.push_back(parse_strategy(s, "strategy"));
  require(!cfg.strategies.empty(), "strategy", [] { return "must name at least one strategy"; });
  cfg.repeat = a.repeat > 0 ? a.repeat : (sweep ? 7 : 10);
  require(a.repeat >= 0 && a.repeat <= 100000, "repeat", [&] {
    return "must be in [1, 100000], or 0 for the default (got " + std::to_string(a.repeat) + ")";
  });
  cfg.workers = a.problem.workers;
  cfg.simd = a.simd;
  cfg.tile = a.problem.tile;
  cfg.splits = a.problem.splits;
  cfg.batch_invariant = a.problem.batch_invariant;
  cfg.chunk_tiles = a.problem.chunk_tiles;
  cfg.order = parse_line_order(a.problem.order, "order");
  cfg.pin_threads = !a.no_pin;
  cfg.add_invariant = a.invariant;
  cfg.check_all_rows = a.check_all_rows;
  cfg.add_head_major = a.head_major;

  std::vector<SweepCase> cases;
  if (sweep) {
    cases = default_sweep(available_memory());
  } else {
    cases.push_back({"custom", a.problem.problem()});
  }
  std::int64_t largest = 0;
  for (const auto& c : cases) largest = std::max(largest, c.problem.kv_bytes());

  BenchRun run;
  run.machine = machine_info();
  run.backend = a.backend;
  const std::int64_t probe_bytes =
      a.probe_mib > 0 ? (a.probe_mib << 20) : backend->probe_bytes(largest);
  // The CPU keeps its probe allocated, and each case interleaves its own passes with its runs.
  fmt::print(stderr, "probe: reading {} MiB...\n", probe_bytes >> 20);
  run.probe = backend->probe(probe_bytes, cfg);
  const std::string device = backend->device();
  if (device.empty()) {
    fmt::print("leanattn bench: {} ({} cores), commit {}, {}\n", run.machine.cpu, run.machine.cores,
               run.machine.commit, run.machine.date);
  } else {
    fmt::print("leanattn bench ({}): {}; host {}, commit {}, {}\n", a.backend, device,
               run.machine.cpu, run.machine.commit, run.machine.date);
  }
  fmt::print("probe: {:.1f} GB/s read (median of 7 passes over {} MiB, {} {}; best {:.1f})\n\n",
             run.probe.median_gbps, run.probe.bytes >> 20, run.probe.threads,
             backend->probe_workers(), run.probe.best_gbps);

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto progress = [&](const std::string& what) {
      fmt::print(stderr, "[{}/{}] {}: {}\n", i + 1, cases.size(), cases[i].label, what);
    };
    LabelledCase lc{cases[i].label, backend->run_case(cases[i].problem, cfg, progress)};
    fmt::print("{}\n", format_case(lc, run.probe.median_gbps));
    std::fflush(stdout);
    run.cases.push_back(std::move(lc));
  }
  if (cases.size() > 1) fmt::print("{}", format_summary(run));
  if (!a.json_path.empty()) std::ofstream(a.json_path) << to_json(run).dump(2) << "\n";
  if (!a.csv_path.empty()) std::ofstream(a.csv_path) << to_csv(run);
  if (!all_ok(run)) {
    fmt::print(stderr, "leanattn bench: some outputs FAILED the check against the reference\n");
    return 1;
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "time strategies against the memory-bandwidth probe (no shape flags: default sweep)");
  args->problem.add_shape_flags(*cmd);
  args->problem.add_plan_flags(*cmd);
  cmd->add_option("--backend", args->backend, "cpu (or cuda when built)");
  cmd->add_option("--strategy", args->strategies, "comma-separated: lean,split,head")
      ->delimiter(',');
  cmd->add_option("--repeat", args->repeat, "timed runs per strategy (median reported)");
  cmd->add_option("--simd", args->simd, "CPU SIMD target (default: best supported)");
  cmd->add_option("--json", args->json_path, "write the results as JSON");
  cmd->add_option("--csv", args->csv_path, "write the results as CSV");
  cmd->add_option("--probe-mib", args->probe_mib, "probe buffer size (default: 1.25 x largest KV)");
  cmd->add_flag("--no-pin", args->no_pin, "do not pin threads to cores");
  cmd->add_flag("--check-all-rows", args->check_all_rows,
                "check every output row against the fp64 reference (default: a sample)");
  cmd->add_flag("--with-invariant", args->invariant,
                "also time batch-invariant lean (what the mode costs)");
  cmd->add_flag("--with-head-major", args->head_major,
                "also time every strategy with the GPU's plan (head-major order; split by FA2's "
                "rule): what the CPU's token-major plans gain");
  cmd->callback([args, cmd] {
    bool sweep = true;
    for (const char* f : kShapeFlags) sweep = sweep && cmd->count(f) == 0;
    const int rc = run_guarded("bench", [&] { return run_bench(*args, sweep); });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
