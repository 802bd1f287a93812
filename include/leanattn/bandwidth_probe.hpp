// The memory-read bandwidth probe the benchmarks compare against: a STREAM-like read (sum) of a
// buffer larger than the caches, split evenly over the same number of threads as the engine.
// Decode reads K and V once, so this read-only figure is its limit.
#pragma once

#include <cstdint>

namespace leanattn::cpu {

struct ProbeResult {
  std::int64_t bytes = 0;  // bytes read per pass
  std::int32_t threads = 0;
  double median_gbps = 0.0;  // GB = 1e9 bytes
  double best_gbps = 0.0;
};

// Allocates and writes `bytes`, then times `passes` full reads with `threads` threads.
ProbeResult measure_read_bandwidth(std::int64_t bytes, std::int32_t threads, std::int32_t passes,
                                   bool pin_threads);

}  // namespace leanattn::cpu
