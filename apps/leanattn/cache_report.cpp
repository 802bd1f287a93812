// Tables and CSV of `leanattn bench --from-cache` (see cache_report.hpp).
#include "cache_report.hpp"

#include <fmt/core.h>

#include <sstream>

#include "bench_report.hpp"

namespace leanattn::cli {

std::string format_cache_table(const std::vector<LabelledCacheCase>& cases) {
  std::ostringstream os;
  os << fmt::format("  {:<10} {:<44} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}  {}\n", "case",
                    "problem", "KiB", "cycles", "min", "roof", "of_roof", "GB/s", "roof_GB",
                    "max_err", "check");
  for (const auto& lc : cases) {
    const bench::CacheResult& r = lc.result;
    std::string problem = describe_problem(r.problem);
    if (problem.size() > 44) problem = problem.substr(0, 41) + "...";
    os << fmt::format(
        "  {:<10} {:<44} {:>7} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.2f} {:>7.2f} {:>7.2f} {:>9.2e}  "
        "{}\n",
        lc.label, problem, r.kv_bytes >> 10, r.cycles_per_token_head, r.min_cycles_per_token_head,
        r.roof, r.roof_fraction, r.gbps, r.ceiling.gbps_per_core, r.max_abs_err,
        r.ok ? "ok" : "FAIL");
  }
  return os.str();
}

std::string cache_csv(const MachineInfo& machine, const std::vector<LabelledCacheCase>& cases) {
  std::ostringstream os;
  os << "date,commit,cpu,simd,workers,counter,clock_ghz,case,q_heads,kv_heads,head_dim,dtype,"
        "q_len,total_tokens,kv_bytes,cycles_per_token_head,min_cycles,roof_cycles,fma,widen,"
        "roof_fraction,gbps,roof_gbps_per_core,max_abs_err,ok,counts_per_core_cycle,"
        "roof_core_cycles\n";
  for (const auto& lc : cases) {
    const bench::CacheResult& r = lc.result;
    const DecodeProblem& p = r.problem;
    os << fmt::format(
        "{},{},\"{}\",{},{},\"{}\",{:.3f},{},{},{},{},{},{},{},{},{:.2f},{:.2f},{:.2f},{:.1f},{:."
        "1f},"
        "{:.3f},{:.3f},{:.3f},{:.3e},{},{:.4f},{:.2f}\n",
        machine.date, machine.commit, machine.cpu, r.simd, r.workers, r.counter, r.clock_ghz,
        lc.label, p.q_heads, p.kv_heads, p.head_dim, kv_dtypes_name(p), p.q_len, p.total_tokens(),
        r.kv_bytes, r.cycles_per_token_head, r.min_cycles_per_token_head, r.roof, r.ceiling.fma,
        r.ceiling.widen, r.roof_fraction, r.gbps, r.ceiling.gbps_per_core, r.max_abs_err,
        r.ok ? 1 : 0, r.per_core_cycle, r.ceiling.cycles_per_token_head);
  }
  return os.str();
}

}  // namespace leanattn::cli
