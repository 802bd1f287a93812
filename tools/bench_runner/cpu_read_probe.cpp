// ReadProbe and measure_read_bandwidth(): the read-bandwidth probe (see read_probe.hpp). The
// sum kernel is compiled for every SIMD target (Highway) with four independent accumulators, so the
// loop is limited by memory, not by add latency.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench_runner/cpu_read_probe.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include <cstddef>

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of x[0, n); n is a multiple of 4 x lanes.
float sum_floats(const float* HWY_RESTRICT x, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (std::size_t i = 0; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + lanes));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * lanes));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * lanes));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include "bench_runner/read_probe.hpp"
#include "cpu/thread_pool.hpp"
#include "harness/large_buffer.hpp"

namespace leanattn::cpu {

HWY_EXPORT(sum_floats);

namespace {
constexpr std::size_t kChunk = 4096;  // floats: a multiple of 4 x lanes for every target
}

struct ReadProbe::Impl {
  std::size_t n;  // floats
  std::int32_t threads;
  std::unique_ptr<float[], void (*)(void*) noexcept> buf;
  ThreadPool pool;
  std::vector<float> sums;

  Impl(std::int64_t bytes, std::int32_t t, bool pin)
      : n(std::max<std::size_t>(kChunk, static_cast<std::size_t>(bytes) / 4 / kChunk * kChunk)),
        threads(t),
        // Huge pages, as the benchmarked caches (harness::HostCase) unless --small-pages.
        buf(static_cast<float*>(allocate_large(n * sizeof(float), LargePages::huge)), free_large),
        pool(t, true, pin),
        sums(static_cast<std::size_t>(t)) {}

  std::pair<std::size_t, std::size_t> share(std::int32_t t) const {
    const std::size_t chunks = n / kChunk;
    const std::size_t b = chunks * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
    const std::size_t e =
        chunks * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
    return {b * kChunk, e * kChunk};
  }
};

ReadProbe::ReadProbe(std::int64_t bytes, std::int32_t threads, bool pin_threads)
    : impl_(std::make_unique<Impl>(bytes, threads, pin_threads)) {
  Impl& p = *impl_;
  p.pool.run([&](std::int32_t t) {  // each thread writes (first-touches) the part it will read
    auto [b, e] = p.share(t);
    for (std::size_t i = b; i < e; ++i) p.buf[i] = static_cast<float>(i & 1023) * 1e-3f;
  });
}

ReadProbe::~ReadProbe() = default;

double ReadProbe::pass() {
  Impl& p = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  p.pool.run([&](std::int32_t t) {
    auto [b, e] = p.share(t);
    p.sums[static_cast<std::size_t>(t)] = HWY_DYNAMIC_DISPATCH(sum_floats)(p.buf.get() + b, e - b);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile float sink = 0.0f;
  for (float x : p.sums) sink = sink + x;
  return static_cast<double>(p.n) * 4.0 / s / 1e9;
}

std::int64_t ReadProbe::bytes() const {
  return static_cast<std::int64_t>(impl_->n * 4);
}

std::int32_t ReadProbe::threads() const {
  return impl_->threads;
}

ProbeResult measure_read_bandwidth(ReadProbe& probe, std::int32_t passes) {
  probe.pass();  // warm-up
  std::vector<double> gbps;
  for (std::int32_t i = 0; i < passes; ++i) gbps.push_back(probe.pass());
  std::sort(gbps.begin(), gbps.end());
  ProbeResult r;
  r.bytes = probe.bytes();
  r.threads = probe.threads();
  r.median_gbps = gbps[gbps.size() / 2];
  r.best_gbps = gbps.back();
  return r;
}

}  // namespace leanattn::cpu
#endif  // HWY_ONCE
