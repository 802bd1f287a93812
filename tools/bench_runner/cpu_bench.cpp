// run_cpu_case(): timing and checking of every strategy on one problem (see cpu_bench.hpp).
#include "bench_runner/cpu_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>

#include "bench_runner/bench_backend.hpp"
#include "bench_runner/bench_result.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::bench {

namespace {

// Reads every line of `buffer` (larger than the last-level cache), so that the K and V lines a
// run reads next come from memory.
std::uint64_t evict_caches(const std::vector<std::uint64_t>& buffer) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < buffer.size(); i += 8) sum += buffer[i];
  return sum;
}

}  // namespace

ReferenceSample reference_sample(harness::HostCase& c, const BenchConfig& cfg) {
  // The fp64 check costs about 2 x len x head_dim per row (reference and naive baseline): keep a
  // long case's sample to about 2^27 element reads.
  const std::int64_t longest =
      *std::max_element(c.problem.seq_lens.begin(), c.problem.seq_lens.end());
  const auto budget_rows = static_cast<std::int32_t>(std::clamp<std::int64_t>(
      (1ll << 27) / std::max<std::int64_t>(1, 2 * longest * c.problem.head_dim), 2,
      cfg.sample_rows));
  ReferenceSample r;
  r.rows = cfg.check_all_rows ? harness::all_rows(c.problem)
                              : harness::sample_rows(c.problem, budget_rows);
  r.ref = reference::naive_attention_rows(c.problem, c.tensors(), r.rows);
  r.naive = harness::naive_same_precision(c.problem, c.tensors(), r.rows);
  return r;
}

std::vector<NamedOptions> bench_variants(const BenchConfig& cfg, bool head_major_row) {
  std::vector<NamedOptions> v;
  for (Strategy s : cfg.strategies) {
    PlanOptions o;
    o.strategy = s;
    o.tile_tokens = cfg.tile;
    o.splits = s == Strategy::split ? cfg.splits : 0;
    o.batch_invariant = s == Strategy::lean && cfg.batch_invariant;
    o.chunk_tiles = cfg.chunk_tiles;
    o.order = cfg.order;
    v.push_back({std::string(strategy_name(s)), o});
  }
  if (cfg.add_invariant) {
    v.push_back(
        {"lean-invariant",
         {.tile_tokens = cfg.tile, .batch_invariant = true, .chunk_tiles = cfg.chunk_tiles}});
  }
  if (cfg.add_head_major && head_major_row) {
    // Every strategy with the GPU's plan: head-major order, split by FA2's wave rule.
    for (Strategy s : cfg.strategies) {
      PlanOptions o{.strategy = s, .order = LineOrder::head_major, .tile_tokens = cfg.tile};
      if (s == Strategy::split) o.split_rule = SplitRule::fa2_waves;
      v.push_back({std::string(strategy_name(s)) + "-head-major", o});
    }
  }
  return v;
}

CaseResult run_cpu_case(const DecodeProblem& problem, const BenchConfig& cfg, cpu::ReadProbe* probe,
                        const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  validate(problem);
  cpu::Engine engine({.workers = cfg.workers, .simd = cfg.simd, .pin_threads = cfg.pin_threads});

  say("filling " + std::to_string(problem.kv_bytes(cfg.shared_kv) >> 20) + " MiB of K and V");
  harness::HostCase c = harness::make_case(problem, 2026, cfg.shared_kv);
  CaseResult result;
  result.problem = c.problem;
  result.shared_kv = cfg.shared_kv;
  result.simd = engine.simd_target();
  result.workers = engine.workers();
  result.kv_bytes = c.problem.kv_bytes(cfg.shared_kv);
  result.ceiling = compute_ceiling(c.problem, simd_shape(result.simd), cfg.clock_ghz, cfg.shared_kv,
                                   cfg.costs ? &*cfg.costs : nullptr);
  result.ceiling_gbps = result.ceiling.gbps_per_core * std::min(result.workers, default_workers());

  // Rotated copies of K and V so that small caches are read from memory, not from the CPU caches.
  // A run reads only the planned keys (kv_bytes: a sliding window reads a small part of a large
  // cache), so the copies needed follow the bytes read; when that many copies of the whole
  // buffer would pass the memory budget (a 4096-key window on a 128k cache would need 32 x 512
  // MiB), a read of an eviction buffer of rotate_bytes precedes every timed run instead.
  const std::int64_t buffer_bytes = static_cast<std::int64_t>(c.k.size() + c.v.size());
  const std::int64_t read_bytes = std::max<std::int64_t>(result.kv_bytes, 1);
  const std::int32_t wanted = kv_copies(read_bytes, cfg.rotate_bytes);
  const bool evict = wanted > 1 && wanted * buffer_bytes > 4 * cfg.rotate_bytes;
  const std::int32_t copies = evict ? 1 : wanted;
  result.kv_copies = copies;
  std::vector<std::uint64_t> eviction(
      evict ? static_cast<std::size_t>(cfg.rotate_bytes) / sizeof(std::uint64_t) : 0, 1);
  result.evict_bytes = static_cast<std::int64_t>(eviction.size() * sizeof(std::uint64_t));
  std::vector<ByteBuffer> k_copies(static_cast<std::size_t>(copies - 1), c.k);
  std::vector<ByteBuffer> v_copies(static_cast<std::size_t>(copies - 1), c.v);
  std::vector<DecodeTensors> tensors;
  tensors.push_back(c.tensors());
  for (std::int32_t i = 0; i + 1 < copies; ++i) {
    DecodeTensors t = c.tensors();
    t.k_cache = k_copies[static_cast<std::size_t>(i)].data();
    t.v_cache = cfg.shared_kv ? t.k_cache : v_copies[static_cast<std::size_t>(i)].data();
    tensors.push_back(t);
  }

  std::vector<Plan> plans;
  std::vector<std::string> names;
  for (const NamedOptions& v : bench_variants(cfg)) {
    plans.push_back(engine.plan(c.problem, v.options));
    names.push_back(v.name);
  }

  say("timing " + std::to_string(plans.size()) + " plans x " + std::to_string(cfg.repeat) +
      " runs");
  std::vector<std::vector<double>> us(plans.size());
  // busy[i][w]: plan i's worker w, one entry per timed run
  std::vector<std::vector<std::vector<double>>> busy(plans.size());
  std::vector<double> probe_gbps;
  std::size_t next = 0;
  for (std::int32_t rep = -1; rep < cfg.repeat; ++rep) {  // rep -1 warms up
    // Each round starts one strategy later, so that none always runs first after the probe
    // (a position worth 2-3% on this VM even after the warm-up run below).
    const auto first = static_cast<std::size_t>(rep + 1);
    for (std::size_t j = 0; j < plans.size(); ++j) {
      const std::size_t i = (first + j) % plans.size();
      const DecodeTensors& t = tensors[next++ % tensors.size()];
      if (evict) eviction[0] = evict_caches(eviction) & 1;  // a use, so the read is kept
      const auto t0 = std::chrono::steady_clock::now();
      engine.run(c.problem, plans[i], t);
      const double dt =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (rep >= 0) {
        us[i].push_back(dt);
        const std::span<const double> seconds = engine.worker_seconds();
        busy[i].resize(seconds.size());
        for (std::size_t w = 0; w < seconds.size(); ++w) busy[i][w].push_back(seconds[w] * 1e6);
      }
    }
    if (probe != nullptr && rep >= 0) {
      probe_gbps.push_back(probe->pass());
      // An untimed run after the probe wakes the engine's threads (asleep during the pass) and
      // refills the code and TLB caches, so the next round's first strategy is not penalised
      // (measured: 15-30% on a 1.5 ms run). It runs the plan that comes first next round.
      engine.run(c.problem, plans[(first + 1) % plans.size()], tensors[next++ % tensors.size()]);
    }
  }
  result.probe_gbps = probe_gbps.empty() ? 0.0 : median(probe_gbps);
  result.probe_passes = static_cast<std::int32_t>(probe_gbps.size());

  say("checking against the fp64 reference");
  const ReferenceSample sample = reference_sample(c, cfg);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    harness::poison_outputs(c);
    engine.run(c.problem, plans[i], c.tensors());
    const harness::Accuracy a =
        harness::check_accuracy(c, sample.ref, true, sample.naive, sample.rows);
    result.results.push_back(strategy_result(names[i], plans[i], us[i], result.kv_bytes,
                                             result.probe_gbps, result.ceiling_gbps, a));
    for (const std::vector<double>& runs : busy[i]) {
      result.results.back().worker_busy_us.push_back(median(runs));
    }
  }
  return result;
}

namespace {

// The CPU engine for `leanattn bench`: its probe stays allocated, and each case interleaves its
// own probe passes with its timed rounds (run_cpu_case).
class CpuBenchBackend final : public BenchBackend {
 public:
  std::string device() const override { return ""; }
  std::string_view probe_workers(std::int32_t count) const override {
    return count == 1 ? "thread" : "threads";
  }
  std::int64_t probe_bytes(std::int64_t largest_kv) const override {
    return std::max<std::int64_t>(largest_kv + largest_kv / 4, 1ll << 30);
  }
  std::int64_t host_probe_bytes(std::int64_t bytes) const override { return bytes; }
  void check_config(const BenchConfig& cfg) const override {
    const cpu::Engine rules({.workers = cfg.workers, .simd = cfg.simd});  // throws Error
  }
  cpu::ProbeResult probe(std::int64_t bytes, const BenchConfig& cfg) override {
    probe_ = std::make_unique<cpu::ReadProbe>(bytes, resolve_workers(cfg.workers), cfg.pin_threads);
    return cpu::measure_read_bandwidth(*probe_, 7);
  }
  CaseResult run_case(const DecodeProblem& problem, const BenchConfig& cfg,
                      const std::function<void(const std::string&)>& progress) override {
    return run_cpu_case(problem, cfg, probe_.get(), progress);
  }

 private:
  std::unique_ptr<cpu::ReadProbe> probe_;
};

}  // namespace

std::unique_ptr<BenchBackend> make_cpu_bench_backend() {
  return std::make_unique<CpuBenchBackend>();
}

}  // namespace leanattn::bench
