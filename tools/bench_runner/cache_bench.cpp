// run_from_cache(): the kernel's cycles per token x KV head from the CPU caches (see
// cache_bench.hpp).
#include "bench_runner/cache_bench.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/cycle_counter.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn::bench {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

CacheResult run_from_cache(const DecodeProblem& problem, const CacheBenchConfig& cfg) {
  validate(problem);
  // One worker: every plan worker inline on this thread, which the counter watches.
  cpu::Engine engine(
      {.workers = cfg.workers,
       .simd = cfg.simd,
       .pin_threads = cfg.pin_threads,
       .inline_kv_bytes = cfg.workers == 1 ? std::numeric_limits<std::int64_t>::max() : 0});
  harness::HostCase c = harness::make_case(problem, 2026, cfg.shared_kv);
  CacheResult r;
  r.problem = c.problem;
  r.simd = engine.simd_target();
  r.workers = engine.workers();
  r.kv_bytes = c.problem.kv_bytes(cfg.shared_kv);
  r.clock_ghz = cfg.clock_ghz;
  r.ceiling = compute_ceiling(c.problem, simd_shape(r.simd), cfg.clock_ghz, cfg.shared_kv,
                              cfg.costs ? &*cfg.costs : nullptr);

  PlanOptions options;
  options.tile_tokens = cfg.tile;
  const Plan plan = engine.plan(c.problem, options);
  const DecodeTensors t = c.tensors();
  const CycleCounter counter;
  r.counter = counter.name();
  r.per_core_cycle = counter.per_core_cycle(cfg.clock_ghz);
  r.roof = r.ceiling.cycles_per_token_head * r.per_core_cycle;
  const double share = static_cast<double>(c.problem.total_tokens()) * c.problem.kv_heads /
                       static_cast<double>(r.workers);
  for (std::int32_t i = 0; i < std::max(10, cfg.repeat / 10); ++i) engine.run(c.problem, plan, t);
  std::vector<double> cycles, seconds;
  for (std::int32_t i = 0; i < cfg.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t c0 = counter.read();
    engine.run(c.problem, plan, t);
    const std::uint64_t c1 = counter.read();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cycles.push_back(static_cast<double>(c1 - c0) / share);
  }
  r.cycles_per_token_head = median(cycles);
  r.min_cycles_per_token_head = *std::min_element(cycles.begin(), cycles.end());
  r.gbps = static_cast<double>(r.kv_bytes) / median(seconds) * 1e-9;
  r.roof_fraction = r.roof / r.cycles_per_token_head;

  // Every row against the fp64 reference (the problem is small).
  BenchConfig check;
  check.check_all_rows = true;
  const ReferenceSample sample = reference_sample(c, check);
  harness::poison_outputs(c);
  engine.run(c.problem, plan, c.tensors());
  const harness::Accuracy a =
      harness::check_accuracy(c, sample.ref, true, sample.naive, sample.rows);
  r.max_abs_err = a.max_abs_err;
  r.tolerance = a.tolerance;
  r.ok = a.ok();
  return r;
}

}  // namespace leanattn::bench
