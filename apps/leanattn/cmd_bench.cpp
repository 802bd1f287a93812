// `leanattn bench`: times every strategy against a read-bandwidth probe measured in the same
// run, checks each against the fp64 reference on a sample, and prints a table (plus --json and
// --csv). With no shape flags it runs the default sweep (default_sweep.hpp).
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string_view>

#include "bench_report.hpp"
#include "bench_runner/bench_backend.hpp"
#include "bench_runner/cycle_counter.hpp"
#include "bench_runner/vector_costs.hpp"
#include "cache_report.hpp"
#include "commands.hpp"
#include "default_sweep.hpp"
#include "harness/large_buffer.hpp"
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
  bool small_pages = false;
  bool from_cache = false;
  std::int64_t cache_kib = 1024;  // --from-cache sweep: K and V per worker
};

const char* const kShapeFlags[] = {
    "--batch",  "--q-heads", "--kv-heads", "--head-dim", "--head-dim-v", "--shared-kv",
    "--mla",    "--seq-len", "--seq-lens", "--dtype",    "--page-size",  "--q-len",
    "--window", "--softcap", "--sinks",    "--alibi",    "--non-causal"};

// The compute ceiling's instruction costs, as the tables' headers say them.
std::string describe_costs(const bench::VectorCosts& c) {
  return fmt::format(
      "core cycles per vector FMA {:.2f}, per widening beside FMAs f16 {:.2f} / bf16 {:.2f}, per "
      "integer op {:.2f}; {}",
      c.fma, c.f16_widen, c.bf16_widen, c.int_op, c.source);
}

// --from-cache: cycles per token x KV head on problems that stay in the CPU caches.
int run_from_cache(const BenchArgs& a, bool sweep, double clock_ghz) {
  require(a.backend == "cpu", "backend",
          [&] { return "must be cpu with --from-cache (got '" + a.backend + "')"; });
  require(a.cache_kib >= 1 && a.cache_kib <= (1 << 20), "cache_kib",
          [&] { return "must be in [1, 1048576] KiB (got " + std::to_string(a.cache_kib) + ")"; });
  bench::CacheBenchConfig cfg;
  cfg.workers = a.problem.workers > 0 ? a.problem.workers : 1;
  cfg.repeat = a.repeat > 0 ? a.repeat : 500;
  cfg.simd = a.simd;
  cfg.tile = a.problem.tile;
  cfg.pin_threads = !a.no_pin;
  cfg.clock_ghz = clock_ghz;
  cfg.costs = bench::measure_vector_costs(a.simd, clock_ghz);
  cfg.shared_kv = a.problem.v_in_k();
  require(a.problem.page_size >= 0, "page_size", [&] {
    return "must be >= 0 (0 = contiguous) (got " + std::to_string(a.problem.page_size) + ")";
  });
  const std::vector<SweepCase> cases =
      sweep ? from_cache_sweep((a.cache_kib << 10) * cfg.workers,
                               parse_dtype(a.problem.dtype, "dtype"), a.problem.page_size)
            : std::vector<SweepCase>{{"custom", a.problem.problem()}};
  const MachineInfo machine = machine_info();
  std::vector<LabelledCacheCase> results;
  for (const SweepCase& c : cases) {
    fmt::print(stderr, "{}: {} runs from cache\n", c.label, cfg.repeat);
    results.push_back({c.label, bench::run_from_cache(c.problem, cfg)});
  }
  const bench::CacheResult& first = results.front().result;
  fmt::print("leanattn bench --from-cache: {} ({} cores), commit {}, {}\nvector flags: {}\n",
             machine.cpu, machine.cores, machine.commit, machine.date, machine.vector_flags);
  fmt::print(
      "{} worker(s), SIMD {}, clock {:.2f} GHz ({}), counter: {}; lean plan, {} runs on the same "
      "K/V\n",
      first.workers, first.simd, clock_ghz, bench::core_clock_method(), first.counter, cfg.repeat);
  fmt::print(
      "cycles = median counts per token x KV head of one worker; roof = the shape's compute "
      "ceiling in the same unit ({}{}); of_roof = roof / cycles\n",
      describe_costs(*cfg.costs),
      first.per_core_cycle != 1.0
          ? fmt::format(", {:.3g} counter ticks per core cycle at the measured clock",
                        first.per_core_cycle)
          : "");
  fmt::print("{}", format_cache_table(results));
  if (!a.csv_path.empty()) std::ofstream(a.csv_path) << cache_csv(machine, results);
  for (const auto& r : results) {
    if (!r.result.ok) {
      fmt::print(stderr, "leanattn bench: some outputs FAILED the check against the reference\n");
      return 1;
    }
  }
  return 0;
}

int run_bench(const BenchArgs& a, bool sweep) {
  set_large_buffer_huge_pages(!a.small_pages);
  const double clock_ghz = bench::measure_core_clock_ghz();
  if (a.from_cache) return run_from_cache(a, sweep, clock_ghz);
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
  cfg.clock_ghz = clock_ghz;
  if (a.backend == "cpu") cfg.costs = bench::measure_vector_costs(a.simd, clock_ghz);
  cfg.shared_kv = a.problem.v_in_k();

  std::vector<SweepCase> cases;
  if (sweep) {
    cases = default_sweep(available_memory());
  } else {
    cases.push_back({"custom", a.problem.problem()});
  }
  std::int64_t largest = 0;
  for (const auto& c : cases) largest = std::max(largest, c.problem.kv_bytes(cfg.shared_kv));

  BenchRun run;
  run.machine = machine_info();
  run.backend = a.backend;
  const std::int64_t probe_bytes =
      a.probe_mib > 0 ? (a.probe_mib << 20) : backend->probe_bytes(largest);
  // Before the probe runs: a custom case that cannot fit, and the executor's rules on the
  // configuration (the CPU engine's --simd and --workers; the sweep keeps only the cases that fit).
  if (!sweep) {
    require_bench_fits(cases.front().problem, cfg.shared_kv, backend->host_probe_bytes(probe_bytes),
                       available_memory(), a.problem.seq_lens.empty() ? "seq_len" : "seq_lens");
  }
  backend->check_config(cfg);  // throws Error
  // The CPU keeps its probe allocated, and each case interleaves its own passes with its runs.
  fmt::print(stderr, "probe: reading {} MiB...\n", probe_bytes >> 20);
  run.probe = backend->probe(probe_bytes, cfg);
  const std::string device = backend->device();
  if (device.empty()) {
    fmt::print("leanattn bench: {} ({} cores), commit {}, {}\nvector flags: {}\n", run.machine.cpu,
               run.machine.cores, run.machine.commit, run.machine.date, run.machine.vector_flags);
  } else {
    fmt::print("leanattn bench ({}): {}; host {}, commit {}, {}\n", a.backend, device,
               run.machine.cpu, run.machine.commit, run.machine.date);
  }
  fmt::print("probe: {:.1f} GB/s read (median of 7 passes over {} MiB, {} {}; best {:.1f})\n",
             run.probe.median_gbps, run.probe.bytes >> 20, run.probe.threads,
             backend->probe_workers(run.probe.threads), run.probe.best_gbps);
  if (cfg.costs) fmt::print("compute ceiling: {}\n", describe_costs(*cfg.costs));
  fmt::print("\n");

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
  cmd->add_flag("--small-pages", args->small_pages,
                "allocate K and V with 4 KiB pages (MADV_NOHUGEPAGE) instead of transparent huge "
                "pages, as a caller's cache without them would be; the probe keeps huge pages "
                "(docs/cpu-engine.md, \"Huge pages\")");
  cmd->add_flag("--from-cache", args->from_cache,
                "measure the kernel from the CPU caches: small K/V (--cache-kib per worker, or the "
                "shape flags), many runs on the same buffers (default 500), one worker unless "
                "--workers; reports the median core cycles per token x KV head of one worker "
                "(hardware counter of this thread, else rdtsc on x86, the generic timer on Arm; "
                "the output names it), the shape's "
                "compute ceiling `roof` in the same unit and of_roof = roof / cycles. No shape "
                "flags but --dtype and --page-size: MHA 32/32, GQA 32/8 and MQA 8/1, d 128 "
                "(default f16, contiguous)");
  cmd->add_option("--cache-kib", args->cache_kib,
                  "--from-cache without shape flags: KiB of K and V per worker (default 1024)");
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
      "  of_roof    GB/s over min(probe, compute ceiling); the ceiling is what this core's vector\n"
      "             units allow for the shape on min(workers, cores) cores: per token x KV head\n"
      "             rows x (head_dim + head_dim_v) / lanes FMAs (rows = q_len x query heads per\n"
      "             KV head; AVX3_BF16's bf16 dot products count head_dim / 2 for the scores) and\n"
      "             (head_dim + head_dim_v) / lanes widening ops (f16/bf16 to f32; f32: none), "
      "each\n"
      "             at its cost in cycles measured at the start (the FMA's, and the widening's\n"
      "             beside FMAs) at the clock measured then; softmax, reductions and loads are\n"
      "             not counted (docs/cpu-engine.md, \"Measuring the kernel\")\n"
      "  vs_head    time of head over this row's time (> 1: this row is faster)\n"
      "  vs_split   time of split over this row's time\n"
      "  max_err    largest |out - fp64 reference| on the checked rows\n"
      "  check      ok when every checked row is within its tolerance\n"
      "Below the table, with several workers: each worker's busy time (its segments, the median\n"
      "over the runs) and the slowest over the fastest: how evenly the plan loaded them");
  cmd->callback([args, cmd] {
    bool sweep = true;
    for (const char* f : kShapeFlags) {
      // --from-cache's sweep takes the element type and the page size.
      const bool sweep_setting = args->from_cache && (std::string_view(f) == "--dtype" ||
                                                      std::string_view(f) == "--page-size");
      sweep = sweep && (sweep_setting || cmd->count(f) == 0);
    }
    const int rc = run_guarded("bench", [&] { return run_bench(*args, sweep); });
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace leanattn::cli
