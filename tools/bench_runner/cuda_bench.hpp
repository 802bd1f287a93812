// Benchmark of one decode problem on the CUDA engine, the GPU counterpart of cpu_bench.hpp: every
// strategy timed in the same run, round-robin, one launch per sample timed with CUDA events (median
// reported; a busy-wait kernel ahead of each sample keeps host overhead out of the timing), K and V
// rotated over device copies when the cache is small enough to stay in L2, and each strategy's
// output checked against the fp64 reference on a sample of rows. Used by `leanattn bench --backend
// cuda` (built only with the CUDA engine).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "bench_runner/cpu_bench.hpp"
#include "bench_runner/read_probe.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::bench {

// Runs `problem` with every configured strategy on the current CUDA device. Uses from `config`:
// strategies, repeat, workers (0: the kernel's occupancy), tile, splits, order, batch_invariant,
// chunk_tiles, add_invariant, sample_rows, check_all_rows and rotate_bytes (SIMD, pinning and
// add_head_major are CPU-only: lean is head-major on the GPU already). probe_gbps fills
// probe_fraction. CaseResult::simd names the device and kernel configuration.
CaseResult run_cuda_case(const DecodeProblem& problem, const BenchConfig& config, double probe_gbps,
                         const std::function<void(const std::string&)>& progress = {});

// The device read-bandwidth probe (tools/cuda_harness/read_probe.hpp): `bytes` read `passes` times.
cpu::ProbeResult measure_cuda_read_bandwidth(std::int64_t bytes, std::int32_t passes);

// "NVIDIA H200, 132 SMs, sm_90, 50 MiB L2, 140 GiB" for the report header.
std::string cuda_device_description();

// Device memory in bytes (to size the probe and skip cases that do not fit).
std::int64_t cuda_device_memory();

}  // namespace leanattn::bench
