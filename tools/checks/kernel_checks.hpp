// The CUDA kernel's randomised check, shared by its executors (`leanattn check --backend cuda`
// and `--backend cuda-emulated`): each random case (random_checks.hpp, the same draw as the
// CPU's) moved to a configuration the kernel covers, run with every strategy and checked against
// the fp64 reference like the CPU's. The executors sit behind KernelBackend, registered by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checks/random_checks.hpp"
#include "harness/host_case.hpp"
#include "leanattn/planner.hpp"

namespace leanattn::checks {

// An executor of the CUDA kernel, run on a HostCase's data.
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;
  virtual std::string_view name() const = 0;
  // Runs the plan `options` give for c.problem and leaves the output in c.out and c.lse.
  // drawn_workers: the case's drawn worker count (the emulator plans for it unless given a
  // count; a GPU plans for its occupancy).
  virtual void run(harness::HostCase& c, const PlanOptions& options,
                   std::int32_t drawn_workers) = 0;
};

struct KernelBackendOptions {
  std::int32_t workers = 0;         // cuda-emulated: CTAs of the plan (0: the drawn count)
  std::uint64_t schedule_seed = 1;  // cuda-emulated: thread and CTA scheduling
};

// "cuda-emulated", then "cuda" in builds with the CUDA engine.
std::vector<std::string> kernel_backend_names();

// Throws Error naming `backend` for a name this build lacks, or for "cuda" without a device.
std::unique_ptr<KernelBackend> make_kernel_backend(std::string_view name,
                                                   const KernelBackendOptions& options);

// The backends' constructors, for the registry (emulated_kernel_backend.cpp;
// cuda_kernel_backend.cpp in CUDA builds).
std::unique_ptr<KernelBackend> make_emulated_kernel_backend(const KernelBackendOptions& options);
std::unique_ptr<KernelBackend> make_cuda_kernel_backend(const KernelBackendOptions& options);

// Case `index` of `seed` on `backend`: lean, batch-invariant lean, split and head, each output
// NaN-poisoned first and compared with the fp64 reference (outcomes named "<backend> <strategy>").
CaseReport kernel_case(std::uint64_t seed, std::int64_t index, const harness::RandomLimits& limits,
                       KernelBackend& backend);

}  // namespace leanattn::checks
