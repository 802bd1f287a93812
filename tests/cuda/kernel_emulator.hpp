// A CPU emulation of the decode kernel's arithmetic, block for block: the same configuration
// (KernelHandle: rows per pass, warp grid, tokens per stage), the same token split over warps,
// the same masking, the per-lane partial row sums and their quad reduction, P rounded to the
// 16-bit type before P V, the warp columns merged in order, slots written and merged by the last
// arriver with the same counters. Everything index-like comes from the kernel's own host/device
// helpers (src/cuda/common). Only the order of the fp32 additions inside an MMA differs (the
// hardware leaves it open). Used by kernel_emulation_test.cpp, which checks it against the fp64
// reference: the numerics of the GPU path, tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cuda::testing {

struct EmulationResult {
  std::int64_t merges = 0;              // reductions merged by a last arriver
  std::vector<std::uint32_t> counters;  // arrival counters after the run (all 0 expected)
};

// Runs `plan` on host tensors as kernel configuration `kernel` would, CTAs finishing in
// `arrival` order (a permutation of the workers). Writes tensors.out and tensors.lse.
// `workspace`: the slots and counters in host memory laid out as the engine lays out a device
// workspace (workspace_pointers), used as found (the protocol simulation); null: fresh arrays of
// its own, counters at 0.
EmulationResult emulate_kernel(const DecodeProblem& problem, const Plan& plan,
                               const DecodeTensors& tensors, const KernelHandle& kernel,
                               std::span<const std::int32_t> arrival,
                               const WorkspacePointers* workspace = nullptr);

}  // namespace leanattn::cuda::testing
