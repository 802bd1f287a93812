// Benchmark of one decode problem on the CPU engine: every strategy timed in the same run,
// round-robin (so drifts hit all of them alike), with KV buffers rotated when the cache is small
// enough to stay in the CPU caches, and each strategy's output checked against the fp64
// reference on a sample of rows. Used by `leanattn bench --backend cpu`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_runner/read_probe.hpp"
#include "bench_runner/roofline.hpp"
#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::bench {

struct BenchConfig {
  std::vector<Strategy> strategies = {Strategy::lean, Strategy::split, Strategy::head};
  std::int32_t repeat = 10;  // timed runs per strategy (median reported)
  std::int32_t workers = 0;  // 0: one per core
  std::string simd;          // "" = best
  std::int32_t tile = 0;
  std::int32_t splits = 0;
  LineOrder order = LineOrder::automatic;  // every strategy (automatic: the engine's)
  bool batch_invariant = false;            // lean only
  // Extra rows, timed in the same round-robin: "lean-invariant" (batch-invariant lean, what the
  // mode costs) and "<strategy>-head-major" for each strategy (the GPU's plan: the paper's line
  // order for lean, pairs to the first free worker for head and split, FA2's split count;
  // against the CPU's token-major plans).
  bool add_invariant = false;
  bool add_head_major = false;
  std::int32_t chunk_tiles = 0;
  std::int32_t sample_rows = 8;  // rows checked against the reference (within a read budget)
  bool check_all_rows = false;   // check every row instead (slow on long contexts)
  bool pin_threads = true;
  std::int64_t rotate_bytes = 512ll << 20;  // rotate KV copies until at least this much is cycled
  double clock_ghz = 0.0;            // measured core clock, for the compute ceiling (0: none)
  std::optional<VectorCosts> costs;  // measured (vector_costs.hpp); none: the assumed ones
  bool shared_kv = false;            // V is the start of K's rows (absorbed MLA): no V cache
};

// One timed row: its name ("lean", "split", "head", "lean-invariant", "lean-head-major",
// "split-head-major", "head-head-major") and the plan options that make it.
struct NamedOptions {
  std::string name;
  PlanOptions options;
};

// The rows a benchmark times for `config`: one per configured strategy, then the optional extra
// rows (head_major_row false where head-major is already lean's order, as on the GPU).
std::vector<NamedOptions> bench_variants(const BenchConfig& config, bool head_major_row = true);

// The rows a benchmark checks (a sample within a read budget, or all with check_all_rows), their
// fp64 reference and the naive same-precision baseline of the accuracy policy.
struct ReferenceSample {
  std::vector<reference::RowId> rows;
  reference::Output ref;
  harness::NaiveBaseline naive;
};
ReferenceSample reference_sample(harness::HostCase& c, const BenchConfig& config);

struct StrategyResult {
  std::string strategy;
  double median_us = 0.0;
  double min_us = 0.0;
  double gbps = 0.0;            // KV bytes / median time
  double probe_fraction = 0.0;  // gbps / probe
  double roof_fraction = 0.0;   // gbps / min(probe, compute ceiling); 0 without a clock
  double max_abs_err = 0.0;
  double tolerance = 0.0;
  bool ok = false;  // within tolerance on the sample
  std::int32_t workers = 0;
  std::int32_t splits = 0;  // split: chosen splits per pair
  std::string order;        // the plan's tile order (line_order_name)
  // Each plan worker's time on its segments (cpu::Engine::worker_seconds), the median over the
  // timed runs, microseconds: how evenly the plan loaded the workers ([workers]; empty for
  // backends that do not measure it).
  std::vector<double> worker_busy_us;
};

struct CaseResult {
  DecodeProblem problem;
  bool shared_kv = false;  // V read from K's rows (BenchConfig::shared_kv)
  std::string simd;
  std::int32_t workers = 0;
  std::int64_t kv_bytes = 0;
  std::int32_t kv_copies = 1;    // rotated copies
  std::int64_t evict_bytes = 0;  // > 0: this many bytes read before every timed run instead
  // Read-probe passes interleaved with this case's timed rounds (one per round): their median
  // is the case's probe, which its fractions use (0 when the case ran without a probe).
  double probe_gbps = 0.0;
  std::int32_t probe_passes = 0;
  // The shape's compute ceiling (roofline.hpp) on min(workers, cores) cores; 0 without a clock.
  ComputeCeiling ceiling;
  double ceiling_gbps = 0.0;
  std::vector<StrategyResult> results;
};

// Runs `problem` with every configured strategy. With a probe, one probe pass follows each timed
// round of the strategies and their median is the case's probe (probe_fraction = gbps / it);
// without, probe_fraction is 0. progress(text) is called before each phase.
CaseResult run_cpu_case(const DecodeProblem& problem, const BenchConfig& config,
                        cpu::ReadProbe* probe,
                        const std::function<void(const std::string&)>& progress = {});

}  // namespace leanattn::bench
