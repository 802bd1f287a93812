// `leanattn bench`: times every strategy against a read-bandwidth probe measured in the same
// run, checks each against the fp64 reference on a sample, and prints a table (plus --json and
// --csv). With no shape flags it runs the default sweep (default_sweep.hpp).
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <thread>

#include "bench_report.hpp"
#include "commands.hpp"
#include "default_sweep.hpp"
#include "leanattn/bandwidth_probe.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "problem_args.hpp"
#if defined(LEANATTN_WITH_CUDA)
#include "bench/cuda_bench.hpp"
#endif

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
#if defined(LEANATTN_WITH_CUDA)
  require(a.backend == "cpu" || a.backend == "cuda", "backend",
          [&] { return "must be cpu or cuda (got '" + a.backend + "')"; });
#else
  require(a.backend == "cpu", "backend", [&] {
    return "must be cpu in this build (CUDA engine not built) (got '" + a.backend + "')";
  });
#endif
  const bool gpu = a.backend == "cuda";
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
  const std::int32_t threads =
      cfg.workers > 0
          ? cfg.workers
          : static_cast<std::int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t probe_bytes = a.probe_mib > 0
                                       ? (a.probe_mib << 20)
                                       : std::max<std::int64_t>(largest + largest / 4, 1ll << 30);
  // Before the probe runs: a custom case that cannot fit, and the engine's --simd and --workers
  // rules (the sweep keeps only the cases that fit).
  if (!sweep) {
    require_bench_fits(cases.front().problem, gpu ? 0 : probe_bytes, available_memory(),
                       a.problem.seq_lens.empty() ? "seq_len" : "seq_lens");
  }
  if (!gpu) {
    const cpu::Engine rules({.workers = cfg.workers, .simd = cfg.simd});  // throws Error
  }
#if defined(LEANATTN_WITH_CUDA)
  if (gpu) {
    // Device probe: at least 4 GiB (far beyond L2), as large as the largest case's KV.
    const std::int64_t gpu_probe =
        a.probe_mib > 0 ? (a.probe_mib << 20) : std::max<std::int64_t>(largest, 4ll << 30);
    fmt::print(stderr, "probe: reading {} MiB on the GPU...\n", gpu_probe >> 20);
    run.probe = bench::measure_cuda_read_bandwidth(gpu_probe, 7);
    fmt::print("leanattn bench (cuda): {}; host {}, commit {}, {}\n",
               bench::cuda_device_description(), run.machine.cpu, run.machine.commit,
               run.machine.date);
    fmt::print("probe: {:.1f} GB/s read (median of 7 passes over {} MiB, {} CTAs; best {:.1f})\n\n",
               run.probe.median_gbps, run.probe.bytes >> 20, run.probe.threads,
               run.probe.best_gbps);
  }
#endif
  // CPU: the probe stays allocated, and each case interleaves its own passes with its runs.
  std::unique_ptr<cpu::ReadProbe> probe;
  if (!gpu) {
    fmt::print(stderr, "probe: reading {} MiB with {} thread{}...\n", probe_bytes >> 20, threads,
               threads == 1 ? "" : "s");
    probe = std::make_unique<cpu::ReadProbe>(probe_bytes, threads, cfg.pin_threads);
    run.probe = cpu::measure_read_bandwidth(*probe, 7);
    fmt::print("leanattn bench: {} ({} cores), commit {}, {}\n", run.machine.cpu, run.machine.cores,
               run.machine.commit, run.machine.date);
    fmt::print(
        "probe: {:.1f} GB/s read (median of 7 passes over {} MiB, {} thread{}; best {:.1f})\n\n",
        run.probe.median_gbps, run.probe.bytes >> 20, threads, threads == 1 ? "" : "s",
        run.probe.best_gbps);
  }

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto progress = [&](const std::string& what) {
      fmt::print(stderr, "[{}/{}] {}: {}\n", i + 1, cases.size(), cases[i].label, what);
    };
#if defined(LEANATTN_WITH_CUDA)
    LabelledCase lc{
        cases[i].label,
        gpu ? bench::run_cuda_case(cases[i].problem, cfg, run.probe.median_gbps, progress)
            : bench::run_cpu_case(cases[i].problem, cfg, probe.get(), progress)};
#else
    LabelledCase lc{cases[i].label,
                    bench::run_cpu_case(cases[i].problem, cfg, probe.get(), progress)};
#endif
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
  cmd->footer(
      "Columns of the tables:\n"
      "  strategy   lean (stream-K ranges), split (fixed splits per pair), head (one pair per\n"
      "             worker); -invariant: batch-invariant lean; -head-major: the GPU's plan\n"
      "  order      tile order: token_major (whole token rows) or head_major\n"
      "  splits     split: pieces per (request, KV head) pair\n"
      "  median_us  median time of a decode step (lean_ms: the same in milliseconds)\n"
      "  GB/s       K and V bytes read per second\n"
      "  of_probe   GB/s over the read-bandwidth probe measured in the same run (1 = the limit)\n"
      "  vs_head    time of head over this row's time (> 1: this row is faster)\n"
      "  vs_split   time of split over this row's time\n"
      "  max_err    largest |out - fp64 reference| on the checked rows\n"
      "  check      ok when every checked row is within its tolerance");
  cmd->callback([args, cmd] {
    bool sweep = true;
    for (const char* f : kShapeFlags) sweep = sweep && cmd->count(f) == 0;
    const int rc = run_guarded("bench", [&] { return run_bench(*args, sweep); });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
