// The CUDA engine's workspace rules as the emulator applies them: the layout the kernel reads
// (its size and where the counters are) and the engine's counter zeroing before a launch (the
// counters of a workspace are zeroed the first time the engine sees them; the kernel's last
// arrivers leave them at zero). The rules are the engine's own (src/cuda/device/workspace.cpp).
#pragma once

#include <cstddef>

#include "cuda/device/workspace.hpp"
#include "leanattn/plan.hpp"

namespace leanattn::emulator {

WorkspaceLayout device_layout(const Plan& plan);

class CounterZeroing {
 public:
  // Zeroes what the engine would zero before `plan` runs on `workspace` (host memory).
  void before_run(const Plan& plan, void* workspace);
  // A new allocation at [begin, begin + bytes): nothing there is known to be zero.
  void forget(const void* begin, std::size_t bytes);

 private:
  cuda::WorkspaceRegistry registry_;  // the engine's own bookkeeping (src/cuda/device)
};

}  // namespace leanattn::emulator
