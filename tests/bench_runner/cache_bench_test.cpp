// The kernel measurements of `leanattn bench`: the compute ceiling of a shape (counted by hand
// here), the cycle counter and clock, run_from_cache's cycles and check, and the of_roof column
// of run_cpu_case.
#include <gtest/gtest.h>

#include <string>

#include "bench_runner/cache_bench.hpp"
#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/cycle_counter.hpp"
#include "bench_runner/roofline.hpp"
#include "bench_runner/vector_costs.hpp"
#include "harness/sanitized.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"

namespace leanattn::bench {
namespace {

DecodeProblem shape(std::int32_t q_heads, std::int32_t kv_heads, std::int32_t d, DType kv,
                    std::int32_t len) {
  DecodeProblem p = harness::test_problem({len}, q_heads, kv_heads, d);  // f16 Q
  p.kv_dtype = kv;
  return p;
}

TEST(Roofline, CountsFmasAndWideningPerTokenAndKvHead) {
  // GQA 32/8, d 128, f16, AVX2: 2 x 4 x 128 / 8 FMAs, 2 x 128 / 8 conversions, on 2 pipes.
  const ComputeCeiling gqa = compute_ceiling(shape(32, 8, 128, DType::f16, 64), {8, true}, 2.0);
  EXPECT_DOUBLE_EQ(gqa.fma, 128.0);
  EXPECT_DOUBLE_EQ(gqa.widen, 32.0);
  EXPECT_DOUBLE_EQ(gqa.cycles_per_token_head, 80.0);
  EXPECT_DOUBLE_EQ(gqa.bytes_per_token_head, 512.0);
  EXPECT_DOUBLE_EQ(gqa.gbps_per_core, 512.0 / 80.0 * 2.0);
  // MQA 8/1 with AVX-512 lanes: 2 x 8 x 128 / 16 + 2 x 128 / 16.
  const ComputeCeiling mqa = compute_ceiling(shape(8, 1, 128, DType::f16, 64), {16, true}, 0.0);
  EXPECT_DOUBLE_EQ(mqa.cycles_per_token_head, (128.0 + 16.0) / 2.0);
  EXPECT_DOUBLE_EQ(mqa.gbps_per_core, 0.0);  // no clock
  // f32: nothing to widen, twice the bytes; f16 without an instruction: kEmulatedF16Ops each.
  const ComputeCeiling f32 = compute_ceiling(shape(4, 4, 64, DType::f32, 64), {8, true}, 1.0);
  EXPECT_DOUBLE_EQ(f32.widen, 0.0);
  EXPECT_DOUBLE_EQ(f32.bytes_per_token_head, 512.0);
  const ComputeCeiling sse = compute_ceiling(shape(4, 4, 64, DType::f16, 64), {4, false}, 1.0);
  EXPECT_DOUBLE_EQ(sse.widen, 2.0 * 64 / 4 * kEmulatedF16Ops);
  // Several query tokens multiply the FMAs, not the bytes.
  DecodeProblem q3 = shape(32, 8, 128, DType::bf16, 64);
  q3.q_len = 3;
  const ComputeCeiling multi = compute_ceiling(q3, {8, true}, 2.0);
  EXPECT_DOUBLE_EQ(multi.fma, 3 * 128.0);
  EXPECT_DOUBLE_EQ(multi.bytes_per_token_head, 512.0);
}

TEST(Roofline, CostsEachInstructionAtItsMeasuredCycles) {
  // GQA 32/8, d 128, f16, AVX-512 lanes, a Zen 4's costs: 64 FMAs at 1 cycle, 16 widenings at 1.5.
  const VectorCosts zen4{.fma = 1.0, .f16_widen = 1.5, .bf16_widen = 1.25, .int_op = 1.0};
  const DecodeProblem gqa = shape(32, 8, 128, DType::f16, 64);
  EXPECT_DOUBLE_EQ(compute_ceiling(gqa, {16, true}, 0.0, false, &zen4).cycles_per_token_head,
                   64.0 + 16 * 1.5);
  // bf16 K, q8_0 V (a pair): K's 8 vectors at bf16's cost, V's at f16's plus 4 integer ops each.
  DecodeProblem pair = shape(32, 8, 128, DType::bf16, 64);
  pair.v_dtype = DType::q8_0;
  EXPECT_DOUBLE_EQ(compute_ceiling(pair, {16, true}, 0.0, false, &zen4).cycles_per_token_head,
                   64.0 + 8 * 1.25 + 8 * (1.5 + 4.0));
  // The assumed costs are the two-pipe model's: (FMAs + widening ops) / 2 for every cache type,
  // with and without an f16 conversion instruction (emulated: kEmulatedF16Ops ops).
  for (const DType t : {DType::f32, DType::f16, DType::bf16, DType::int8, DType::fp8_e5m2,
                        DType::fp8_e4m3, DType::q8_0, DType::q4_0}) {
    for (const bool f16c : {true, false}) {
      const ComputeCeiling c = compute_ceiling(shape(32, 8, 128, t, 64), {8, f16c}, 0.0);
      EXPECT_DOUBLE_EQ(c.cycles_per_token_head, (c.fma + c.widen) / 2) << dtype_name(t);
    }
  }
  EXPECT_DOUBLE_EQ(assumed_vector_costs({4, false}).f16_widen, kEmulatedF16Ops / 2);
  EXPECT_DOUBLE_EQ(assumed_vector_costs({8, true}).fma, 0.5);
}

TEST(VectorCosts, MeasuresTheKernelsTargetOrSaysItAssumed) {
  const VectorCosts none = measure_vector_costs("", 0.0);  // no clock
  EXPECT_FALSE(none.measured);
  EXPECT_NE(none.source.find("no core clock"), std::string::npos);
  const double ghz = measure_core_clock_ghz();
  if (ghz <= 0) GTEST_SKIP() << "no core clock measured on this architecture";
  for (const std::string& name : cpu::simd_targets()) {
    const VectorCosts c = measure_vector_costs(name, ghz);
    if (!c.measured) continue;  // a target this file was not compiled for
    // One vector FMA costs 1/4 to 8 cycles on any core (4 pipes to an emulation); a widening
    // beside it costs nothing more (pipes of its own) up to a few cycles (emulated). Under the
    // sanitizers Highway's ops are calls (25 cycles per FMA under ASan): no upper bounds there.
    EXPECT_GT(c.fma, 0.2) << name;
    if (!harness::kSanitized) {
      EXPECT_LT(c.fma, 8.0) << name;
      EXPECT_LT(c.f16_widen, 40.0) << name;
      EXPECT_LT(c.bf16_widen, 40.0) << name;
    }
    EXPECT_DOUBLE_EQ(c.int_op, 0.5) << name;  // assumed, and said so
    EXPECT_NE(c.source.find("measured"), std::string::npos) << name;
  }
  EXPECT_THROW(measure_vector_costs("AVX9", ghz), Error);
}

TEST(CycleCounter, CountsForwardAndNamesItself) {
  const double ghz = measure_core_clock_ghz();
#if defined(__x86_64__)
  EXPECT_GT(ghz, 0.3);
  EXPECT_LT(ghz, 10.0);
#elif defined(__aarch64__)  // measured too, but under qemu (the Arm stage) the time is qemu's
  EXPECT_GE(ghz, 0.0);
#else
  EXPECT_EQ(ghz, 0.0);
#endif
  const CycleCounter counter;
  EXPECT_FALSE(counter.name().empty());
  if (counter.hardware()) {
    EXPECT_EQ(counter.per_core_cycle(2.0), 1.0);
  }
  const std::uint64_t c0 = counter.read();
  volatile double x = 1.0;
  for (int i = 0; i < 1000000; ++i) x = x * 1.0000001;
    // A million dependent multiplies: over a millisecond, which the TSC counts as millions of
    // ticks and a 25 MHz generic timer (the slowest Arm servers') as more than 25000.
#if defined(__x86_64__)
  EXPECT_GT(counter.read(), c0 + 100000);
#else
  EXPECT_GT(counter.read(), c0 + 20000);
#endif
}

TEST(CacheBench, ReportsCyclesPerTokenAndKvHeadAndChecksEveryRow) {
  for (const std::int32_t workers : {1, 2}) {
    CacheBenchConfig cfg;
    cfg.repeat = 20;
    cfg.workers = workers;
    cfg.pin_threads = false;
    cfg.clock_ghz = 2.0;
    const CacheResult r = run_from_cache(shape(8, 2, 64, DType::f16, 301), cfg);
    EXPECT_TRUE(r.ok) << "max_abs_err " << r.max_abs_err;
    EXPECT_EQ(r.workers, workers);
    EXPECT_FALSE(r.counter.empty());
    EXPECT_GT(r.cycles_per_token_head, 0.0);
    EXPECT_LE(r.min_cycles_per_token_head, r.cycles_per_token_head);
    EXPECT_GT(r.gbps, 0.0);
    EXPECT_DOUBLE_EQ(r.ceiling.cycles_per_token_head,
                     compute_ceiling(r.problem, simd_shape(r.simd), 2.0).cycles_per_token_head);
    EXPECT_DOUBLE_EQ(r.roof, r.ceiling.cycles_per_token_head * r.per_core_cycle);
    EXPECT_DOUBLE_EQ(r.roof_fraction, r.roof / r.cycles_per_token_head);
  }
}

TEST(CacheBench, CostsTheCeilingAtTheGivenInstructionCosts) {
  CacheBenchConfig cfg;
  cfg.repeat = 5;
  cfg.pin_threads = false;
  cfg.clock_ghz = 2.0;
  cfg.costs = VectorCosts{.fma = 0.7, .f16_widen = 1.3, .bf16_widen = 0.9, .int_op = 0.4};
  const CacheResult r = run_from_cache(shape(8, 2, 64, DType::f16, 64), cfg);
  EXPECT_DOUBLE_EQ(r.ceiling.cycles_per_token_head,
                   compute_ceiling(r.problem, simd_shape(r.simd), 2.0, false, &*cfg.costs)
                       .cycles_per_token_head);
  EXPECT_NE(r.ceiling.cycles_per_token_head,
            compute_ceiling(r.problem, simd_shape(r.simd), 2.0).cycles_per_token_head);
}

TEST(CpuBench, OfRoofDividesByTheLowerOfProbeAndComputeCeiling) {
  BenchConfig cfg;
  cfg.repeat = 3;
  cfg.workers = 2;
  cfg.pin_threads = false;
  cfg.rotate_bytes = 1 << 20;
  cfg.clock_ghz = 2.0;
  cpu::ReadProbe probe(4 << 20, 2, false);
  const CaseResult r = run_cpu_case(shape(8, 2, 64, DType::f16, 300), cfg, &probe);
  ASSERT_GT(r.ceiling_gbps, 0.0);
  const double roof = std::min(r.probe_gbps, r.ceiling_gbps);
  for (const StrategyResult& s : r.results) {
    EXPECT_TRUE(s.ok);
    EXPECT_DOUBLE_EQ(s.roof_fraction, s.gbps / roof);
  }
  cfg.costs = VectorCosts{.fma = 0.7, .f16_widen = 1.3, .bf16_widen = 0.9, .int_op = 0.4};
  const CaseResult costed = run_cpu_case(shape(8, 2, 64, DType::f16, 300), cfg, nullptr);
  EXPECT_DOUBLE_EQ(costed.ceiling.cycles_per_token_head,
                   compute_ceiling(costed.problem, simd_shape(costed.simd), 2.0, false, &*cfg.costs)
                       .cycles_per_token_head);
  cfg.costs.reset();
  cfg.clock_ghz = 0.0;  // no clock, no ceiling
  const CaseResult none = run_cpu_case(shape(8, 2, 64, DType::f16, 300), cfg, nullptr);
  EXPECT_EQ(none.ceiling_gbps, 0.0);
  for (const StrategyResult& s : none.results) EXPECT_EQ(s.roof_fraction, 0.0);
}

}  // namespace
}  // namespace leanattn::bench
