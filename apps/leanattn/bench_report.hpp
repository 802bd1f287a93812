// Reports of `leanattn bench`: the per-case table printed as cases finish, the summary table at
// the end, and the same numbers as JSON and CSV (bench/results/ keeps them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/read_probe.hpp"
#include "machine_info.hpp"

namespace leanattn::cli {

struct LabelledCase {
  std::string label;  // e.g. "llama3-8b"
  bench::CaseResult result;
};

struct BenchRun {
  MachineInfo machine;
  std::string backend = "cpu";
  cpu::ProbeResult probe;
  std::vector<LabelledCase> cases;
};

// One line describing the problem: heads, head_dim, dtype, lengths, layout.
std::string describe_problem(const DecodeProblem& p);

// The table of one case: strategy, median time, GB/s, fraction of the probe, speedups over head
// and split, error on the sample and the check verdict.
std::string format_case(const LabelledCase& c, double probe_gbps);

// One line per case: the best strategy's numbers and lean's speedups.
std::string format_summary(const BenchRun& run);

nlohmann::ordered_json to_json(const BenchRun& run);
std::string to_csv(const BenchRun& run);

// True when every strategy of every case passed its correctness check.
bool all_ok(const BenchRun& run);

}  // namespace leanattn::cli
