// run_cpu_case (the CPU half of `leanattn bench`) and the read probe on small problems: every
// strategy timed and checked, probe passes interleaved with the rounds, fractions against them.
#include <gtest/gtest.h>

#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/read_probe.hpp"
#include "harness/test_problem.hpp"

namespace leanattn::bench {
namespace {

DecodeProblem small_problem() {
  return harness::test_problem({300, 17, 0}, 8, 2, 64);
}

BenchConfig small_config() {
  BenchConfig cfg;
  cfg.repeat = 3;
  cfg.workers = 2;
  cfg.pin_threads = false;
  cfg.rotate_bytes = 1 << 20;
  return cfg;
}

TEST(ReadProbe, ReadsItsWholeBufferEveryPass) {
  cpu::ReadProbe probe(3 << 20, 2, false);
  EXPECT_EQ(probe.bytes(), 3 << 20);
  EXPECT_EQ(probe.threads(), 2);
  EXPECT_GT(probe.pass(), 0.0);
  const cpu::ProbeResult r = cpu::measure_read_bandwidth(probe, 3);
  EXPECT_EQ(r.bytes, 3 << 20);
  EXPECT_GT(r.median_gbps, 0.0);
  EXPECT_GE(r.best_gbps, r.median_gbps);
}

TEST(CpuBench, TimesAndChecksEveryStrategyAgainstInterleavedProbePasses) {
  cpu::ReadProbe probe(4 << 20, 2, false);
  const CaseResult r = run_cpu_case(small_problem(), small_config(), &probe);
  EXPECT_EQ(r.probe_passes, 3);  // one per timed round
  EXPECT_GT(r.probe_gbps, 0.0);
  EXPECT_GT(r.kv_copies, 1);  // a small cache is rotated
  ASSERT_EQ(r.results.size(), 3u);
  const char* names[] = {"lean", "split", "head"};
  for (std::size_t i = 0; i < 3; ++i) {
    const StrategyResult& s = r.results[i];
    EXPECT_EQ(s.strategy, names[i]);
    EXPECT_TRUE(s.ok) << s.strategy << " max_abs_err " << s.max_abs_err;
    EXPECT_GT(s.median_us, 0.0);
    EXPECT_LE(s.min_us, s.median_us);
    EXPECT_DOUBLE_EQ(s.probe_fraction, s.gbps / r.probe_gbps);
  }
}

// `leanattn bench --dtype fp8_e4m3 | int8`: 8-bit caches (f16 Q) are timed and checked too, and
// their bytes count at 8 bits (plus the per-token scales).
TEST(CpuBench, TimesAndChecksQuantizedCaches) {
  for (DType kv : {DType::fp8_e4m3, DType::int8}) {
    DecodeProblem p = small_problem();
    p.kv_dtype = kv;
    p.kv_scales = default_kv_scales(kv);
    DecodeProblem f16 = small_problem();
    const std::int64_t scale_bytes = p.kv_scales == KvScales::per_token_head ? 317 * 2 * 2 * 4 : 0;
    EXPECT_EQ(p.kv_bytes(), f16.kv_bytes() / 2 + scale_bytes);
    const CaseResult r = run_cpu_case(p, small_config(), nullptr);
    ASSERT_EQ(r.results.size(), 3u);
    for (const StrategyResult& s : r.results) {
      EXPECT_TRUE(s.ok) << dtype_name(kv) << " " << s.strategy << " max_abs_err " << s.max_abs_err;
    }
  }
}

TEST(CpuBench, WithoutAProbeReportsNoFraction) {
  const CaseResult r = run_cpu_case(small_problem(), small_config(), nullptr);
  EXPECT_EQ(r.probe_passes, 0);
  EXPECT_EQ(r.probe_gbps, 0.0);
  for (const StrategyResult& s : r.results) {
    EXPECT_TRUE(s.ok);
    EXPECT_EQ(s.probe_fraction, 0.0);
  }
}

}  // namespace
}  // namespace leanattn::bench
