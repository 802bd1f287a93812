// The executors `leanattn bench` times, behind one interface: each measures its own
// read-bandwidth probe and times one case (cpu_bench.hpp, cuda_bench.hpp). The command picks one
// by name (make_bench_backend) and knows nothing else of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/read_probe.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::bench {

class BenchBackend {
 public:
  virtual ~BenchBackend() = default;

  // What runs the cases, for the report's first line: "" for the host's CPU, else the device
  // ("NVIDIA H200, 132 SMs, sm_90, 50 MiB L2, 140 GiB").
  virtual std::string device() const = 0;
  // What the probe's `count` threads are called ("1 thread", "2 threads", "CTAs").
  virtual std::string_view probe_workers(std::int32_t count) const = 0;

  // The probe's size for cases of at most `largest_kv` bytes of K and V.
  virtual std::int64_t probe_bytes(std::int64_t largest_kv) const = 0;
  // Of a probe of `bytes`, what it takes from the host's memory (0 for a device's probe).
  virtual std::int64_t host_probe_bytes(std::int64_t bytes) const = 0;
  // Throws Error naming the option when `config` breaks the executor's rules (before the probe).
  virtual void check_config(const BenchConfig& config) const = 0;
  // Measures the probe over `bytes` (7 passes after a warm-up). The CPU keeps it for run_case,
  // which interleaves its own passes with the timed rounds.
  virtual cpu::ProbeResult probe(std::int64_t bytes, const BenchConfig& config) = 0;

  // Times and checks every configured strategy on `problem` (after probe()); progress(text)
  // before each phase.
  virtual CaseResult run_case(const DecodeProblem& problem, const BenchConfig& config,
                              const std::function<void(const std::string&)>& progress) = 0;
};

// "cpu", then "cuda" in builds with the CUDA engine.
std::vector<std::string> bench_backend_names();

// Throws Error naming `backend` for a name this build lacks.
std::unique_ptr<BenchBackend> make_bench_backend(std::string_view name);

// The backends' constructors (cpu_bench.cpp; cuda_bench.cpp in CUDA builds), for the registry.
std::unique_ptr<BenchBackend> make_cpu_bench_backend();
std::unique_ptr<BenchBackend> make_cuda_bench_backend();

}  // namespace leanattn::bench
