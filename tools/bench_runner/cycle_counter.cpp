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

// Each architecture's two instruments, in one block: a chain of dependent integer operations of
// known latency (the core clock) and a fixed-rate counter readable from user space (the fallback
// when no cycle counter opens).
#if defined(__x86_64__)
constexpr bool kInstruments = true;
constexpr const char* kClockMethod = "dependent multiplies";
// 8 x `iterations` dependent 64-bit multiplies, 3 cycles each (Intel since Sandy Bridge, AMD
// since Zen). Not adds: Golden Cove's renamer folds chains of adds of an immediate.
constexpr double kChainCycles = 24.0;  // per iteration
void dependent_chain(std::uint64_t iterations) {
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
constexpr const char* kTicksName = "rdtsc";
constexpr const char* kTicksKind = "TSC";
std::uint64_t ticks() {
  return __rdtsc();
}
#elif defined(__aarch64__)
constexpr bool kInstruments = true;
constexpr const char* kClockMethod = "dependent adds";
// 8 x `iterations` dependent 64-bit adds, 1 cycle each on Arm's cores (Cortex-A and Neoverse
// N1, V1, V2 and their relatives).
constexpr double kChainCycles = 8.0;
void dependent_chain(std::uint64_t iterations) {
  std::uint64_t x = 1;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    asm volatile(
        "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\t"
        "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1"
        : "+r"(x));
  }
}
// The generic timer's virtual count (CNTVCT_EL0): a fixed rate, readable from user space.
constexpr const char* kTicksName = "cntvct_el0";
constexpr const char* kTicksKind = "generic timer";
std::uint64_t ticks() {
  std::uint64_t t;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(t));
  return t;
}
#else
constexpr bool kInstruments = false;
constexpr const char* kClockMethod = "not measured";
constexpr double kChainCycles = 0.0;
void dependent_chain(std::uint64_t) {}
constexpr const char* kTicksName = "";
constexpr const char* kTicksKind = "";
std::uint64_t ticks() {
  return 0;
}
#endif

// The fixed-rate counter's ticks per second (TSC, generic timer), from a 20 ms run against the
// steady clock.
double ticks_ghz() {
  const auto t0 = Clock::now();
  const std::uint64_t c0 = ticks();
  while (seconds_since(t0) < 0.02) {
  }
  const std::uint64_t c1 = ticks();
  return static_cast<double>(c1 - c0) / seconds_since(t0) * 1e-9;
}

}  // namespace

double measure_core_clock_ghz() {
  if constexpr (!kInstruments) return 0.0;
  constexpr std::uint64_t kIterations = 1u << 18;  // 6.3 M cycles on x86, 2.1 M on Arm
  dependent_chain(kIterations);                    // warm up (clock ramp)
  double best = 0.0;
  for (int run = 0; run < 7; ++run) {
    const auto t0 = Clock::now();
    dependent_chain(kIterations);
    best =
        std::max(best, kChainCycles * static_cast<double>(kIterations) / seconds_since(t0) * 1e-9);
  }
  return best;
}

const char* core_clock_method() {
  return kClockMethod;
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
  if constexpr (!kInstruments) {
    name_ = "unavailable";
    return;
  }
  ticks_ghz_ = ticks_ghz();
  char text[128];
  std::snprintf(text, sizeof text, "%s (no cycle counter here): %s ticks at %.3f GHz", kTicksName,
                kTicksKind, ticks_ghz_);
  name_ = text;
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
  return ticks();
}

}  // namespace leanattn::bench
