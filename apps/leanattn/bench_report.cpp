// Tables, JSON and CSV for `leanattn bench` (see bench_report.hpp).
#include "bench_report.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

namespace leanattn::cli {

namespace {

const bench::StrategyResult* find(const bench::CaseResult& c, const std::string& name) {
  for (const auto& r : c.results) {
    if (r.strategy == name) return &r;
  }
  return nullptr;
}

// Speedup of r over the strategy `base` (time ratio), or 0 when base was not run.
double speedup(const bench::CaseResult& c, const bench::StrategyResult& r, const char* base) {
  const bench::StrategyResult* b = find(c, base);
  return b ? b->median_us / r.median_us : 0.0;
}

std::string lengths_text(const std::vector<std::int32_t>& lens) {
  bool uniform =
      std::all_of(lens.begin(), lens.end(), [&](std::int32_t x) { return x == lens[0]; });
  if (uniform) return fmt::format("{} x {}", lens.size(), lens[0]);
  std::string s;
  for (std::size_t i = 0; i < lens.size() && i < 6; ++i)
    s += (i ? "," : "") + std::to_string(lens[i]);
  if (lens.size() > 6) s += fmt::format(",... ({} requests)", lens.size());
  return s;
}

// "128", or K's and V's widths "576/512" where they differ.
std::string width_text(const DecodeProblem& p) {
  return p.value_dim() == p.head_dim ? std::to_string(p.head_dim)
                                     : fmt::format("{}/{}", p.head_dim, p.value_dim());
}

std::string ratio(double x) {
  return x > 0 ? fmt::format("{:.2f}", x) : "-";
}

}  // namespace

std::string describe_problem(const DecodeProblem& p) {
  std::string layout =
      p.layout == KvLayout::contiguous ? "contiguous" : fmt::format("paged {}", p.page_size);
  std::string variant;
  const AttentionVariant& v = p.variant;
  if (p.has_query_start_loc()) {
    std::vector<std::int32_t> counts;
    for (std::int32_t b = 0; b < p.batch(); ++b) counts.push_back(p.query_len(b));
    variant += fmt::format(" query_lens {}{}", lengths_text(counts), v.causal ? "" : " non-causal");
  } else if (p.q_len != 1) {
    variant += fmt::format(" q_len {}{}", p.q_len, v.causal ? "" : " non-causal");
  }
  if (v.has_window()) variant += fmt::format(" window {}", v.window_left);
  if (v.softcap != 0.0f) variant += fmt::format(" softcap {}", v.softcap);
  if (v.sinks) variant += " sinks";
  if (v.alibi) variant += " alibi";
  const std::string types = kv_dtypes_name(p);
  return fmt::format("heads {}/{} d {} {} seq_lens {} ({}){}", p.q_heads, p.kv_heads, width_text(p),
                     types, lengths_text(p.seq_lens), layout, variant);
}

std::string format_case(const LabelledCase& lc, double probe_gbps) {
  const bench::CaseResult& c = lc.result;
  std::ostringstream os;
  os << fmt::format("{}: {}{}\n", lc.label, describe_problem(c.problem),
                    c.shared_kv ? ", V in K's rows" : "");
  const std::string probe =
      c.probe_passes > 0
          ? fmt::format("probe {:.1f} GB/s (median of {} passes between the runs)", c.probe_gbps,
                        c.probe_passes)
          : fmt::format("probe {:.1f} GB/s", c.probe_gbps > 0 ? c.probe_gbps : probe_gbps);
  os << fmt::format(
      "  KV {:.1f} MiB{}, {} worker{}, SIMD {}, {}\n", static_cast<double>(c.kv_bytes) / (1 << 20),
      c.kv_copies > 1 ? fmt::format(" (x{} rotated copies)", c.kv_copies)
      : c.evict_bytes > 0
          ? fmt::format(" (caches evicted: {} MiB read before each run)", c.evict_bytes >> 20)
          : "",
      c.workers, c.workers == 1 ? "" : "s", c.simd, probe);
  if (c.ceiling_gbps > 0) {
    os << fmt::format(
        "  compute ceiling {:.1f} GB/s ({:.1f} cycles per token x KV head: {:.0f} FMAs + {:.0f} "
        "widening ops at the costs above; {:.1f} GB/s per core)\n",
        c.ceiling_gbps, c.ceiling.cycles_per_token_head, c.ceiling.fma, c.ceiling.widen,
        c.ceiling.gbps_per_core);
  }
  os << fmt::format("  {:<16} {:<11} {:>6} {:>12} {:>8} {:>9} {:>8} {:>8} {:>9} {:>10}  {}\n",
                    "strategy", "order", "splits", "median_us", "GB/s", "of_probe", "of_roof",
                    "vs_head", "vs_split", "max_err", "check");
  for (const auto& r : c.results) {
    os << fmt::format(
        "  {:<16} {:<11} {:>6} {:>12.1f} {:>8.2f} {:>9.2f} {:>8.2f} {:>8} {:>9} {:>10.2e}  {}\n",
        r.strategy, r.order, r.splits > 0 ? std::to_string(r.splits) : "-", r.median_us, r.gbps,
        r.probe_fraction, r.roof_fraction, ratio(speedup(c, r, "head")),
        ratio(speedup(c, r, "split")), r.max_abs_err, r.ok ? "ok" : "FAIL");
  }
  // Each worker's busy time (the median over runs), where there is more than one.
  for (const auto& r : c.results) {
    if (r.worker_busy_us.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(r.worker_busy_us.begin(), r.worker_busy_us.end());
    // (A worker with no segment, more workers than tiles, has ~0 us: the ratio then says so.)
    os << fmt::format("  busy {:<11} {:.0f} us per worker; slowest / fastest {:.3f}\n", r.strategy,
                      fmt::join(r.worker_busy_us, " "), *lo > 0 ? *hi / *lo : 0.0);
  }
  return os.str();
}

std::string format_summary(const BenchRun& run) {
  std::ostringstream os;
  os << fmt::format(
      "summary ({} backend, probe {:.1f} GB/s read with {} threads, {} MiB; of_probe uses each "
      "case's own probe passes)\n",
      run.backend, run.probe.median_gbps, run.probe.threads, run.probe.bytes >> 20);
  os << fmt::format("  {:<12} {:<44} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9}  {}\n", "case", "problem",
                    "lean_ms", "GB/s", "of_probe", "of_roof", "vs_head", "vs_split", "check");
  for (const auto& lc : run.cases) {
    const bench::CaseResult& c = lc.result;
    const bench::StrategyResult* lean = find(c, "lean");
    const bench::StrategyResult* r = lean ? lean : &c.results.front();
    bool ok = std::all_of(c.results.begin(), c.results.end(), [](const auto& x) { return x.ok; });
    std::string problem =
        fmt::format("{}/{} d{} {} {}", c.problem.q_heads, c.problem.kv_heads, width_text(c.problem),
                    kv_dtypes_name(c.problem), lengths_text(c.problem.seq_lens));
    if (problem.size() > 44) problem = problem.substr(0, 41) + "...";
    os << fmt::format("  {:<12} {:<44} {:>9.2f} {:>8.2f} {:>8.2f} {:>8.2f} {:>8} {:>9}  {}\n",
                      lc.label, problem, r->median_us / 1000.0, r->gbps, r->probe_fraction,
                      r->roof_fraction, ratio(speedup(c, *r, "head")),
                      ratio(speedup(c, *r, "split")), ok ? "ok" : "FAIL");
  }
  return os.str();
}

nlohmann::ordered_json to_json(const BenchRun& run) {
  nlohmann::ordered_json j;
  j["machine"] = {{"cpu", run.machine.cpu},
                  {"cores", run.machine.cores},
                  {"date", run.machine.date},
                  {"commit", run.machine.commit},
                  {"vector_flags", run.machine.vector_flags}};
  j["probe_read_gbps"] = run.probe.median_gbps;
  j["probe_best_gbps"] = run.probe.best_gbps;
  j["probe_bytes"] = run.probe.bytes;
  j["probe_threads"] = run.probe.threads;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& lc : run.cases) {
    const bench::CaseResult& c = lc.result;
    const DecodeProblem& p = c.problem;
    for (const auto& r : c.results) {
      results.push_back({{"case", lc.label},
                         {"backend", run.backend},
                         {"simd", c.simd},
                         {"strategy", r.strategy},
                         {"batch", p.batch()},
                         {"q_heads", p.q_heads},
                         {"kv_heads", p.kv_heads},
                         {"head_dim", p.head_dim},
                         {"head_dim_v", p.value_dim()},
                         {"shared_kv", c.shared_kv},
                         {"seq_lens", p.seq_lens},
                         {"dtype", kv_dtypes_name(p)},
                         {"page_size", p.layout == KvLayout::paged ? p.page_size : 0},
                         {"q_len", p.q_len},
                         {"query_start_loc", p.query_start_loc},
                         {"causal", p.variant.causal},
                         {"window_left", p.variant.window_left},
                         {"softcap", p.variant.softcap},
                         {"sinks", p.variant.sinks},
                         {"alibi", p.variant.alibi},
                         {"workers", r.workers},
                         {"splits", r.splits},
                         {"order", r.order},
                         {"median_us", r.median_us},
                         {"min_us", r.min_us},
                         {"kv_bytes", c.kv_bytes},
                         {"gbps", r.gbps},
                         {"probe_gbps", c.probe_gbps},
                         {"probe_fraction", r.probe_fraction},
                         {"ceiling_gbps", c.ceiling_gbps},
                         {"roof_fraction", r.roof_fraction},
                         {"speedup_vs_head", speedup(c, r, "head")},
                         {"speedup_vs_split", speedup(c, r, "split")},
                         {"max_abs_err", r.max_abs_err},
                         {"tolerance", r.tolerance},
                         {"ok", r.ok},
                         {"worker_busy_us", r.worker_busy_us}});
    }
  }
  j["results"] = std::move(results);
  return j;
}

std::string to_csv(const BenchRun& run) {
  std::ostringstream os;
  os << "date,commit,cpu,cores,backend,simd,case,strategy,batch,q_heads,kv_heads,head_dim,dtype,"
        "page_size,total_tokens,max_seq_len,seq_lens,workers,splits,median_us,min_us,kv_bytes,"
        "gbps,probe_gbps,probe_fraction,speedup_vs_head,speedup_vs_split,max_abs_err,ok,order,"
        "ceiling_gbps,roof_fraction,head_dim_v,shared_kv\n";
  for (const auto& lc : run.cases) {
    const bench::CaseResult& c = lc.result;
    const DecodeProblem& p = c.problem;
    const std::int32_t longest = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());
    std::string lens;  // ';'-separated, so the CSV keeps one field
    for (std::size_t i = 0; i < p.seq_lens.size(); ++i) {
      lens += (i ? ";" : "") + std::to_string(p.seq_lens[i]);
    }
    for (const auto& r : c.results) {
      os << fmt::format(
          "{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2f},{:.2f},{},{:.3f},"
          "{:.3f},{:.4f},{:.3f},{:.3f},{:.3e},{},{},{:.3f},{:.4f},{},{}\n",
          run.machine.date, run.machine.commit, run.machine.cpu, run.machine.cores, run.backend,
          c.simd, lc.label, r.strategy, p.batch(), p.q_heads, p.kv_heads, p.head_dim,
          kv_dtypes_name(p), p.layout == KvLayout::paged ? p.page_size : 0, p.total_tokens(),
          longest, lens, r.workers, r.splits, r.median_us, r.min_us, c.kv_bytes, r.gbps,
          c.probe_gbps, r.probe_fraction, speedup(c, r, "head"), speedup(c, r, "split"),
          r.max_abs_err, r.ok ? 1 : 0, r.order, c.ceiling_gbps, r.roof_fraction, p.value_dim(),
          c.shared_kv ? 1 : 0);
    }
  }
  return os.str();
}

bool all_ok(const BenchRun& run) {
  for (const auto& lc : run.cases) {
    for (const auto& r : lc.result.results) {
      if (!r.ok) return false;
    }
  }
  return true;
}

}  // namespace leanattn::cli
