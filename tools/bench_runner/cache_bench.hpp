// `leanattn bench --from-cache`: the CPU kernel's cost in core cycles per token x KV head, on a
// problem small enough to stay in the CPU caches (a few hundred KiB to a few MiB of K and V per
// worker), run many times with the same buffers, so kernel changes can be measured without
// DRAM's noise. Beside it the shape's compute ceiling (roofline.hpp) and their ratio.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench_runner/roofline.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::bench {

struct CacheBenchConfig {
  std::int32_t repeat = 500;  // timed runs (median reported), after warm-up runs
  std::int32_t workers = 1;   // plan workers; 1 runs on the calling thread (the counter's)
  std::string simd;           // "" = best
  std::int32_t tile = 0;
  bool pin_threads = true;
  double clock_ghz = 0.0;            // measured core clock (measure_core_clock_ghz)
  std::optional<VectorCosts> costs;  // measured (vector_costs.hpp); none: the assumed ones
  bool shared_kv = false;            // V is the start of K's rows (absorbed MLA): no V cache
};

struct CacheResult {
  DecodeProblem problem;
  std::string simd;
  std::int32_t workers = 0;
  std::int64_t kv_bytes = 0;
  std::string counter;  // CycleCounter::name()
  double clock_ghz = 0.0;
  // Counts of the counter per run over one worker's share of the token x KV head pairs
  // (total / workers); with several workers the calling thread also waits for the others.
  double cycles_per_token_head = 0.0;  // median
  double min_cycles_per_token_head = 0.0;
  double per_core_cycle = 1.0;  // counts per core cycle (CycleCounter::per_core_cycle)
  double gbps = 0.0;            // K and V bytes / median wall time
  ComputeCeiling ceiling;       // in core cycles
  double roof = 0.0;            // the ceiling in the counter's unit
  double roof_fraction = 0.0;   // roof / cycles_per_token_head
  double max_abs_err = 0.0;
  double tolerance = 0.0;
  bool ok = false;  // every output row within tolerance of the fp64 reference
};

// Runs `problem` with the lean plan, config.repeat times on the same K and V.
CacheResult run_from_cache(const DecodeProblem& problem, const CacheBenchConfig& config);

}  // namespace leanattn::bench
