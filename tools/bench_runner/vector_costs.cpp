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
inline constexpr int kChains = 10;  // independent accumulators: FMA latency 4 x 2 pipes, and more
// The loops' inputs come from, and their results go to, volatiles, so that the compiler can
// neither evaluate the chains itself nor merge equal ones.
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

// Ten different starting values.
void start(VF& a0, VF& a1, VF& a2, VF& a3, VF& a4, VF& a5, VF& a6, VF& a7, VF& a8, VF& a9) {
  const DF df;
  const float s = accumulator_seed;
  a0 = hn::Set(df, s), a1 = hn::Set(df, s + 1), a2 = hn::Set(df, s + 2), a3 = hn::Set(df, s + 3);
  a4 = hn::Set(df, s + 4), a5 = hn::Set(df, s + 5), a6 = hn::Set(df, s + 6);
  a7 = hn::Set(df, s + 7), a8 = hn::Set(df, s + 8), a9 = hn::Set(df, s + 9);
}

// Keeps the accumulators alive (their sum goes to a volatile).
void keep(VF a0, VF a1, VF a2, VF a3, VF a4, VF a5, VF a6, VF a7, VF a8, VF a9) {
  accumulator_sink =
      hn::GetLane(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                          hn::Add(hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)), hn::Add(a8, a9))));
}

double fma_loop(std::int64_t iterations) {
  const DF df;
  const VF x = hn::Set(df, accumulator_seed * 0.999f), y = hn::Set(df, accumulator_seed * 1e-3f);
  VF a0, a1, a2, a3, a4, a5, a6, a7, a8, a9;
  start(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
  const auto t0 = Clock::now();
  for (std::int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, x, y), a1 = hn::MulAdd(a1, x, y), a2 = hn::MulAdd(a2, x, y);
    a3 = hn::MulAdd(a3, x, y), a4 = hn::MulAdd(a4, x, y), a5 = hn::MulAdd(a5, x, y);
    a6 = hn::MulAdd(a6, x, y), a7 = hn::MulAdd(a7, x, y), a8 = hn::MulAdd(a8, x, y);
    a9 = hn::MulAdd(a9, x, y);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  keep(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
  return s;
}

// kChains vectors of 16-bit values widened and multiplied into their own accumulators per
// round, from four rotating rows of an L1-resident buffer (so the loads and widenings stay in
// the loop). T: hwy::float16_t or hwy::bfloat16_t.
template <typename T>
double widen_loop(std::int64_t iterations) {
  const DF df;
  const hn::Rebind<T, DF> dh;
  const std::size_t n = hn::Lanes(df);
  std::vector<T> rows(4 * kChains * n);
  // Values near 1 (1.0 is 0x3C00 in f16, 0x3F80 in bf16).
  const std::uint16_t one = std::is_same_v<T, hwy::bfloat16_t> ? 0x3F80 : 0x3C00;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto bits = static_cast<std::uint16_t>(one + i % 7);
    std::memcpy(&rows[i], &bits, sizeof(bits));
  }
  const VF y = hn::Set(df, accumulator_seed * 1e-3f);
  VF a0, a1, a2, a3, a4, a5, a6, a7, a8, a9;
  start(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
  const auto t0 = Clock::now();
  for (std::int64_t i = 0; i < iterations; ++i) {
    const T* p = rows.data() + static_cast<std::size_t>(i & 3) * kChains * n;
    const auto w = [&](int c) { return hn::PromoteTo(df, hn::LoadU(dh, p + c * n)); };
    a0 = hn::MulAdd(a0, w(0), y), a1 = hn::MulAdd(a1, w(1), y), a2 = hn::MulAdd(a2, w(2), y);
    a3 = hn::MulAdd(a3, w(3), y), a4 = hn::MulAdd(a4, w(4), y), a5 = hn::MulAdd(a5, w(5), y);
    a6 = hn::MulAdd(a6, w(6), y), a7 = hn::MulAdd(a7, w(7), y), a8 = hn::MulAdd(a8, w(8), y);
    a9 = hn::MulAdd(a9, w(9), y);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  keep(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
  return s;
}

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

// Core cycles per round of `loop`: the best of 7 runs of about 2 ms each.
double cycles_per_round(double (*loop)(std::int64_t), double clock_ghz) {
  constexpr std::int64_t kRounds = 200000;
  loop(kRounds / 10);  // warm-up (and the AVX-512 licence, where there is one)
  double best = 1e30;
  for (int i = 0; i < 7; ++i) best = std::min(best, loop(kRounds));
  return best * clock_ghz * 1e9 / kRounds;
}

}  // namespace

VectorCosts measure_vector_costs(const std::string& simd, double clock_ghz) {
  const VectorCosts assumed = assumed_vector_costs(simd_shape(simd));
  if (clock_ghz <= 0) return assumed;
  const std::int64_t target = cpu::find_simd_kernel(simd).target;
  for (const detail::VectorLoops& l : detail::vector_loops()) {
    if (l.target != target) continue;
    VectorCosts c = assumed;
    c.fma = cycles_per_round(l.fma, clock_ghz) / detail::kChains;
    c.f16_widen = std::max(0.0, cycles_per_round(l.f16, clock_ghz) / detail::kChains - c.fma);
    c.bf16_widen = std::max(0.0, cycles_per_round(l.bf16, clock_ghz) / detail::kChains - c.fma);
    c.int_op = c.fma;
    c.measured = true;
    return c;
  }
  return assumed;
}

}  // namespace leanattn::bench
#endif  // HWY_ONCE
