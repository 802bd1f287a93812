// A HostCase (harness/host_case.hpp) on the GPU: its inputs uploaded once, device views of them,
// plans run with a cuda::Engine, and the output and LSE copied back into the HostCase so that the
// CPU-side accuracy policy (harness/accuracy.hpp) checks GPU results. Shared by the GPU tests
// (tests/cuda), `leanattn bench --backend cuda` (tools/bench_runner/cuda_bench.cpp) and `leanattn
// check`. Not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/device/device_buffer.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cuda_engine.hpp"

namespace leanattn::cuda {

class DeviceCase {
 public:
  // Uploads c's q, k, v, block table, sinks and ALiBi slopes; allocates the device output and
  // LSE.
  explicit DeviceCase(const harness::HostCase& c);

  const DecodeProblem& problem() const { return problem_; }

  // Dense device views (out and lse included) reading K and V copy `kv_copy` (0: the original).
  DecodeTensors tensors(std::int32_t kv_copy = 0) const;

  // Adds device copies of K and V until there are `copies` in all (the benchmark rotates them so
  // that a small cache is read from memory, not from L2).
  void set_kv_copies(std::int32_t copies);
  std::int32_t kv_copies() const { return static_cast<std::int32_t>(k_.size()); }

  // Fills the device output and LSE with NaN (an executor that skips a row cannot pass).
  void poison();

  // Copies the device output and LSE into c.out and c.lse (waits for the device).
  void download(harness::HostCase& c) const;

 private:
  DecodeProblem problem_;
  DeviceBuffer q_, table_, out_, lse_;
  DeviceBuffer sinks_, alibi_slopes_;  // [q_heads] float32 when the variant uses them
  DeviceBuffer k_scale_, v_scale_;     // an 8-bit cache's scales (HostCase::k_scale, v_scale)
  std::vector<DeviceBuffer> k_, v_;
  std::size_t k_bytes_ = 0;
  std::size_t v_bytes_ = 0;  // HostCase::v (head_dim_v wide; none with shared_kv)
  bool shared_kv_ = false;   // V is the start of K's rows (HostCase::shared_kv)
};

// Runs `plan` (made for c.problem) on the GPU with `engine` on c's data and writes the result into
// c.out and c.lse (the GPU tests; `leanattn check --backend cuda` does the same through the
// executor seam, tools/checks/cuda_kernel_backend.cpp).
void run_host_case(Engine& engine, harness::HostCase& c, const Plan& plan);

}  // namespace leanattn::cuda
