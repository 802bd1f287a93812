// Core cycles of the calling thread, for kernel measurements that wall-clock time on a shared
// machine cannot give: the hardware counter of user-space cycles (perf_event_open, allowed for
// one's own threads at kernel.perf_event_paranoid <= 2), or, where the counter is unavailable
// (containers, VMs without a PMU), a fixed-rate counter: x86's TSC (rdtsc, at the nominal clock
// on current x86) or 64-bit Arm's generic timer (cntvct_el0, tens of MHz to 1 GHz), wall time
// that also counts the time the thread was descheduled. name() says which. Used by `leanattn
// bench --from-cache`.
#pragma once

#include <cstdint>
#include <string>

namespace leanattn::bench {

// The core clock in GHz, measured: a chain of dependent integer operations of known latency
// (x86: multiplies, 3 cycles on every x86 core of the last decade; aarch64: adds, 1 cycle) timed
// by the steady clock, best of several short runs (a run that was preempted only looks slower).
// 0 where the chain is not implemented (other architectures).
double measure_core_clock_ghz();
// How measure_core_clock_ghz() measures here: "dependent multiplies", "dependent adds", or
// "not measured".
const char* core_clock_method();

class CycleCounter {
 public:
  CycleCounter();
  ~CycleCounter();
  CycleCounter(const CycleCounter&) = delete;
  CycleCounter& operator=(const CycleCounter&) = delete;

  // Cycles of this thread (counter) or fixed-rate ticks (fallback), since an arbitrary origin.
  std::uint64_t read() const;
  bool hardware() const { return fd_ >= 0; }
  // Counts per core cycle at `clock_ghz`: 1 for the hardware counter, ticks' GHz / clock_ghz for
  // the fallback (which counts at its fixed rate whatever the core's clock).
  double per_core_cycle(double clock_ghz) const {
    return hardware() || clock_ghz <= 0 ? 1.0 : ticks_ghz_ / clock_ghz;
  }
  // "perf user cycles (this thread)", "rdtsc (no cycle counter here): TSC ticks at <f> GHz" or
  // "cntvct_el0 (no cycle counter here): generic timer ticks at <f> GHz".
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  double ticks_ghz_ = 0.0;  // fallback: the fixed-rate counter's rate
  std::string name_;
};

}  // namespace leanattn::bench
