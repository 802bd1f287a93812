// The cycle counter and the clock measurement of `leanattn bench --from-cache` (see
// cycle_counter.hpp).
#include "bench_runner/cycle_counter.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace leanattn::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

#if defined(__x86_64__)
// 8 x `iterations` dependent 64-bit multiplies, 3 cycles each (Intel since Sandy Bridge, AMD
// since Zen). Not adds: Golden Cove's renamer folds chains of adds of an immediate.
void multiply_chain(std::uint64_t iterations) {
  std::uint64_t x = 1;
  const std::uint64_t one = 1;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    asm volatile(
        "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
        "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
        : "+r"(x)
        : "r"(one));
  }
}

// TSC ticks per second, from a 20 ms run against the steady clock.
double tsc_ghz() {
  const auto t0 = Clock::now();
  const std::uint64_t c0 = __rdtsc();
  while (seconds_since(t0) < 0.02) {
  }
  const std::uint64_t c1 = __rdtsc();
  return static_cast<double>(c1 - c0) / seconds_since(t0) * 1e-9;
}
#endif

}  // namespace

double measure_core_clock_ghz() {
#if defined(__x86_64__)
  constexpr std::uint64_t kIterations = 1u << 18;  // 6.3 M cycles, 3 ms at 2 GHz
  multiply_chain(kIterations);                     // warm up (clock ramp)
  double best = 0.0;
  for (int run = 0; run < 7; ++run) {
    const auto t0 = Clock::now();
    multiply_chain(kIterations);
    best = std::max(best, 24.0 * static_cast<double>(kIterations) / seconds_since(t0) * 1e-9);
  }
  return best;
#else
  return 0.0;
#endif
}

CycleCounter::CycleCounter() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd_ >= 0) {
    // A counter that opens but never counts (some VMs) is no counter.
    const std::uint64_t c0 = read();
    volatile int sink = 0;
    for (int i = 0; i < 10000; ++i) sink = sink + i;
    if (read() == c0) {
      close(fd_);
      fd_ = -1;
    }
  }
  if (fd_ >= 0) {
    name_ = "perf user cycles (this thread)";
    return;
  }
#if defined(__x86_64__)
  tsc_ghz_ = tsc_ghz();
  char text[128];
  std::snprintf(text, sizeof text, "rdtsc (no cycle counter here): TSC ticks at %.2f GHz",
                tsc_ghz_);
  name_ = text;
#else
  name_ = "unavailable";
#endif
}

CycleCounter::~CycleCounter() {
  if (fd_ >= 0) close(fd_);
}

std::uint64_t CycleCounter::read() const {
  if (fd_ >= 0) {
    std::uint64_t value = 0;
    if (::read(fd_, &value, sizeof value) == static_cast<ssize_t>(sizeof value)) return value;
    return 0;
  }
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

}  // namespace leanattn::bench
