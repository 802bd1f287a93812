// Reports of `leanattn bench --from-cache`: one table row per case (cycles per token x KV head,
// the compute ceiling, their ratio, the check), and the same as CSV.
#pragma once

#include <string>
#include <vector>

#include "bench_runner/cache_bench.hpp"
#include "machine_info.hpp"

namespace leanattn::cli {

struct LabelledCacheCase {
  std::string label;
  bench::CacheResult result;
};

std::string format_cache_table(const std::vector<LabelledCacheCase>& cases);
std::string cache_csv(const MachineInfo& machine, const std::vector<LabelledCacheCase>& cases);

}  // namespace leanattn::cli
