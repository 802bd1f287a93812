// The pieces of a benchmark result every executor's runner shares (cpu_bench.cpp,
// cuda_bench.cpp): the median, the count of rotated K/V copies, and one strategy's row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_runner/cpu_bench.hpp"
#include "harness/accuracy.hpp"
#include "leanattn/plan.hpp"

namespace leanattn::bench {

// The median of `v` (the mean of the middle two for an even count); v non-empty.
double median(std::vector<double> v);

// Copies of K and V (1 to 64) that cycle at least `rotate_bytes` through runs that each read
// `read_bytes` of one copy, so that a small cache is read from memory, not from a cache.
std::int32_t kv_copies(std::int64_t read_bytes, std::int64_t rotate_bytes);

// One timed row: `plan`'s timings `us` (microseconds, non-empty) over `kv_bytes` of K and V,
// against a probe of `probe_gbps` (0: no fraction) and the shape's compute ceiling of
// `ceiling_gbps` (roofline.hpp; 0: no of_roof), with its accuracy verdict.
StrategyResult strategy_result(const std::string& name, const Plan& plan,
                               const std::vector<double>& us, std::int64_t kv_bytes,
                               double probe_gbps, double ceiling_gbps,
                               const harness::Accuracy& accuracy);

}  // namespace leanattn::bench
