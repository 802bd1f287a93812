// Core cycles of the calling thread, for kernel measurements that wall-clock time on a shared
// machine cannot give: the hardware counter of user-space cycles (perf_event_open, allowed for
// one's own threads at kernel.perf_event_paranoid <= 2), or, where the counter is unavailable
// (containers, VMs without a PMU), rdtsc scaled by core clock / TSC frequency, which also counts
// the time the thread was descheduled. name() says which. Used by `leanattn bench --from-cache`.
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
  // clock_ghz: the measured core clock, to scale TSC ticks in the fallback.
  explicit CycleCounter(double clock_ghz);
  ~CycleCounter();
  CycleCounter(const CycleCounter&) = delete;
  CycleCounter& operator=(const CycleCounter&) = delete;

  // Cycles since an arbitrary origin, of this thread (counter) or of the core clock (fallback).
  std::uint64_t read() const;
  bool hardware() const { return fd_ >= 0; }
  // "perf user cycles (this thread)" or "rdtsc x <clock>/<tsc> (TSC <f> GHz)".
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  double tsc_scale_ = 1.0;  // core cycles per TSC tick (fallback)
  std::string name_;
};

}  // namespace leanattn::bench
