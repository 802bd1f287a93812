// median(), kv_copies() and strategy_result() (see bench_result.hpp).
#include "bench_runner/bench_result.hpp"

#include <algorithm>

#include "leanattn/core/ceil_div.hpp"

namespace leanattn::bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::int32_t kv_copies(std::int64_t buffer_bytes, std::int64_t rotate_bytes) {
  return static_cast<std::int32_t>(
      std::clamp<std::int64_t>(buffer_bytes > 0 ? ceil_div(rotate_bytes, buffer_bytes) : 1, 1, 64));
}

StrategyResult strategy_result(const std::string& name, const Plan& plan,
                               const std::vector<double>& us, std::int64_t kv_bytes,
                               double probe_gbps, double ceiling_gbps,
                               const harness::Accuracy& accuracy) {
  StrategyResult r;
  r.strategy = name;
  r.median_us = median(us);
  r.min_us = *std::min_element(us.begin(), us.end());
  r.gbps = static_cast<double>(kv_bytes) / (r.median_us * 1e-6) / 1e9;
  r.probe_fraction = probe_gbps > 0 ? r.gbps / probe_gbps : 0.0;
  const double roof = probe_gbps > 0 ? std::min(probe_gbps, ceiling_gbps) : ceiling_gbps;
  r.roof_fraction = ceiling_gbps > 0 ? r.gbps / roof : 0.0;
  r.max_abs_err = accuracy.max_abs_err;
  r.tolerance = accuracy.tolerance;
  r.ok = accuracy.ok();
  r.workers = plan.workers;
  r.splits = plan.splits;
  r.order = std::string(line_order_name(plan.order));
  return r;
}

}  // namespace leanattn::bench
