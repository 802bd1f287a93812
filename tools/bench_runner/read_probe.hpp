// The memory-read bandwidth probe the benchmarks compare against: a STREAM-like read (sum) of a
// buffer larger than the caches, split evenly over the same number of threads as the engine.
// Decode reads K and V once, so this read-only figure is its limit.
#pragma once

#include <cstdint>
#include <memory>

namespace leanattn::cpu {

struct ProbeResult {
  std::int64_t bytes = 0;  // bytes read per pass
  std::int32_t threads = 0;
  double median_gbps = 0.0;  // GB = 1e9 bytes
  double best_gbps = 0.0;
};

// The probe with its buffer and threads kept, so that benchmarks can interleave probe passes
// with the runs they compare against it: on a shared machine the bandwidth drifts by 10-30%
// within a minute, and a probe measured once at the start misstates later fractions.
class ReadProbe {
 public:
  // Allocates and writes `bytes` (huge pages where the OS offers them, like the harness's caches),
  // split evenly over `threads` threads.
  ReadProbe(std::int64_t bytes, std::int32_t threads, bool pin_threads);
  ~ReadProbe();
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;

  double pass();  // one timed read of the whole buffer: GB/s
  std::int64_t bytes() const;
  std::int32_t threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A ReadProbe's median and best of `passes` passes, after one warm-up pass.
ProbeResult measure_read_bandwidth(ReadProbe& probe, std::int32_t passes);

}  // namespace leanattn::cpu
