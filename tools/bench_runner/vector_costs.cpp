// Measures roofline.hpp's VectorCosts on each compiled Highway target (see vector_costs.hpp);
// foreach_target re-includes this file once per target and each target registers its loops.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench_runner/vector_costs.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#ifndef LEANATTN_BENCH_VECTOR_COSTS_ONCE
#define LEANATTN_BENCH_VECTOR_COSTS_ONCE
namespace leanattn::bench::detail {

// One target's loops: seconds for `iterations` rounds of kChains FMAs (fma) or of kChains
// widenings each followed by an FMA (f16, bf16), and the FMAs per round.
struct VectorLoops {
  std::int64_t target = 0;  // Highway's target bit
  double (*fma)(std::int64_t iterations) = nullptr;
  double (*f16)(std::int64_t iterations) = nullptr;
  double (*bf16)(std::int64_t iterations) = nullptr;
};
// Independent accumulators: enough for two pipes at an FMA latency of 4 (or SSE4's multiply and
// add, latency 6-8, at two per cycle) with registers to spare on AVX2's 16; four-pipe cores
// (Neoverse V1/V2) would need 16 and read about 0.33 cycles per FMA instead of 0.25.
inline constexpr int kChains = 12;
// The loops' inputs come from, and their results go to, volatiles (read after the first clock
// reading, written before the second), so that the compiler can neither evaluate the chains
// itself, nor merge equal ones, nor move them out of the timed span.
inline volatile float accumulator_seed = 1.0f;
inline volatile float accumulator_sink = 0.0f;

std::vector<VectorLoops>& vector_loops();
inline int register_vector_loops(const VectorLoops& loops) {
  vector_loops().push_back(loops);
  return 0;
}

}  // namespace leanattn::bench::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace leanattn::bench::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using Clock = std::chrono::steady_clock;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// kChains accumulators with different starting values (from the volatile seed), and their sum
// to the volatile sink. Written out: scalable vectors cannot live in arrays.
#define LEANATTN_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// Hides a pointer's value from the optimiser, so that loads through it stay in the loop.
template <typename T>
const T* opaque(const T* p) {
#if defined(__GNUC__)
  asm volatile("" : "+r"(p));
#endif
  return p;
}

double fma_loop(std::int64_t iterations) {
  const DF df;
  const auto t0 = Clock::now();
  const float seed = accumulator_seed;
  const VF x = hn::Set(df, seed * 0.999f), y = hn::Set(df, seed * 1e-3f);
#define LEANATTN_START(i) VF a##i = hn::Set(df, seed + i);
  LEANATTN_CHAINS(LEANATTN_START)
  for (std::int64_t i = 0; i < iterations; ++i) {
#define LEANATTN_FMA(i) a##i = hn::MulAdd(a##i, x, y);
    LEANATTN_CHAINS(LEANATTN_FMA)
  }
  VF sum = hn::Zero(df);
#define LEANATTN_SUM(i) sum = hn::Add(sum, a##i);
  LEANATTN_CHAINS(LEANATTN_SUM)
  accumulator_sink = hn::GetLane(sum);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// kChains vectors of 16-bit values loaded from L1, widened and multiplied into their own
// accumulators per round, from four rotating rows of a small buffer (the pointer hidden from
// the optimiser, so that the loads and widenings stay in the loop). Values 0.5-0.51: the chains
// converge. T: hwy::float16_t or hwy::bfloat16_t.
template <typename T>
double widen_loop(std::int64_t iterations) {
  const DF df;
  const hn::Rebind<T, DF> dh;
  const std::size_t n = hn::Lanes(df);
  std::vector<T> rows(4 * kChains * n);
  const std::uint16_t half = std::is_same_v<T, hwy::bfloat16_t> ? 0x3F00 : 0x3800;  // 0.5
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto bits = static_cast<std::uint16_t>(half + i % 7);
    std::memcpy(&rows[i], &bits, sizeof(bits));
  }
  const auto t0 = Clock::now();
  const float seed = accumulator_seed;
  const VF y = hn::Set(df, seed * 1e-3f);
  LEANATTN_CHAINS(LEANATTN_START)
  for (std::int64_t i = 0; i < iterations; ++i) {
    const T* p = opaque(rows.data() + static_cast<std::size_t>(i & 3) * kChains * n);
#define LEANATTN_WIDEN_FMA(i) \
  a##i = hn::MulAdd(a##i, hn::PromoteTo(df, hn::LoadU(dh, p + i * n)), y);
    LEANATTN_CHAINS(LEANATTN_WIDEN_FMA)
  }
  VF sum = hn::Zero(df);
  LEANATTN_CHAINS(LEANATTN_SUM)
  accumulator_sink = hn::GetLane(sum);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
#undef LEANATTN_WIDEN_FMA
#undef LEANATTN_SUM
#undef LEANATTN_FMA
#undef LEANATTN_START
#undef LEANATTN_CHAINS

[[maybe_unused]] static const int kRegistered = register_vector_loops(
    {HWY_TARGET, &fma_loop, &widen_loop<hwy::float16_t>, &widen_loop<hwy::bfloat16_t>});

}  // namespace leanattn::bench::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "bench_runner/vector_costs.hpp"
#include "cpu/segment_kernel.hpp"

namespace leanattn::bench {

namespace detail {
std::vector<VectorLoops>& vector_loops() {
  static std::vector<VectorLoops> loops;
  return loops;
}
}  // namespace detail

namespace {

// Core cycles per round of `loop`: the best of 7 runs of 1-2 ms each (6M FMAs).
double cycles_per_round(double (*loop)(std::int64_t), double clock_ghz) {
  constexpr std::int64_t kRounds = 500000;
  loop(kRounds / 10);  // warm-up (and the AVX-512 licence, where there is one)
  double best = 1e30;
  for (int i = 0; i < 7; ++i) best = std::min(best, loop(kRounds));
  return best * clock_ghz * 1e9 / kRounds;
}

}  // namespace

VectorCosts measure_vector_costs(const std::string& simd, double clock_ghz) {
  VectorCosts c = assumed_vector_costs(simd_shape(simd));
  const cpu::SimdKernel kernel = cpu::find_simd_kernel(simd);
  if (clock_ghz <= 0) {
    c.source = "assumed (no core clock measured here)";
    return c;
  }
  for (const detail::VectorLoops& l : detail::vector_loops()) {
    if (l.target != kernel.target) continue;
    c.fma = cycles_per_round(l.fma, clock_ghz) / detail::kChains;
    c.f16_widen = std::max(0.0, cycles_per_round(l.f16, clock_ghz) / detail::kChains - c.fma);
    c.bf16_widen = std::max(0.0, cycles_per_round(l.bf16, clock_ghz) / detail::kChains - c.fma);
    c.measured = true;
    c.source =
        "FMA and widening measured here; the 8-bit loaders' integer ops assumed at half a cycle, "
        "a bf16 dot product at an FMA's cost";
    return c;
  }
  c.source = "assumed (the bench runner has no loops for " + kernel.name + ")";
  return c;
}

}  // namespace leanattn::bench
#endif  // HWY_ONCE
