// Core cycles of the calling thread, for kernel measurements that wall-clock time on a shared
// machine cannot give: the hardware counter of user-space cycles (perf_event_open, allowed for
// one's own threads at kernel.perf_event_paranoid <= 2), or, where the counter is unavailable
// (containers, VMs without a PMU), rdtsc: ticks at the TSC's fixed rate (the nominal clock on
// current x86), wall time that also counts the time the thread was descheduled. name() says
// which. Used by `leanattn bench --from-cache`.
#pragma once

#include <cstdint>
#include <string>

namespace leanattn::bench {

// The core clock in GHz, measured: a chain of dependent integer multiplies (3 cycles each on
// every x86 core of the last decade) timed by the steady clock, best of several short runs (a
// run that was preempted only looks slower). 0 where the chain is not implemented (non-x86).
double measure_core_clock_ghz();

class CycleCounter {
 public:
  CycleCounter();
  ~CycleCounter();
  CycleCounter(const CycleCounter&) = delete;
  CycleCounter& operator=(const CycleCounter&) = delete;

  // Cycles of this thread (counter) or TSC ticks (fallback), since an arbitrary origin.
  std::uint64_t read() const;
  bool hardware() const { return fd_ >= 0; }
  // Counts per core cycle at `clock_ghz`: 1 for the hardware counter, TSC GHz / clock_ghz for
  // the fallback (which counts at the TSC's fixed rate whatever the core's clock).
  double per_core_cycle(double clock_ghz) const {
    return hardware() || clock_ghz <= 0 ? 1.0 : tsc_ghz_ / clock_ghz;
  }
  // "perf user cycles (this thread)" or "rdtsc (no cycle counter here): TSC ticks at <f> GHz".
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  double tsc_ghz_ = 0.0;  // fallback: the TSC's rate
  std::string name_;
};

}  // namespace leanattn::bench
