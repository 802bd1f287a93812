// The CUDA kernel's source on the CPU emulator behind the executor seam (leanattn/executor.hpp):
// name "cuda-emulated", host memory, the CUDA engine's plans (head-major, FA2's split rule) for a
// given number of CTAs, run by an EmulatedDevice kept across runs (its workspace reused as the
// engine reuses its own). A tool, not registered with make_executor: `leanattn check --backend
// cuda-emulated` makes it (tools/checks/emulated_kernel_backend.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "emulator/emulated_device.hpp"
#include "leanattn/executor.hpp"

namespace leanattn::emulator {

// `workers` CTAs per plan (>= 1; a GPU takes its occupancy's count); `options`: the scheduling.
std::unique_ptr<Executor> make_emulated_executor(std::int32_t workers,
                                                 const RunOptions& options = {});

}  // namespace leanattn::emulator
