// The CUDA engine's workspace rules as the emulator applies them: the layout the kernel reads
// (its size and where the counters are) and the engine's counter zeroing before a launch (the
// counters of a workspace are zeroed the first time the engine sees them; the kernel's last
// arrivers leave them at zero). One place to follow src/cuda/device when its rules change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "leanattn/plan.hpp"

// Until the CUDA first-run fixes (issue 13) land, the engine keeps these rules inside engine.cpp
// and the emulator mirrors them; afterwards it uses the engine's own WorkspaceRegistry. Drop the
// mirror then.
#if __has_include("cuda/device/workspace.hpp")
#include "cuda/device/workspace.hpp"
#define LEANATTN_EMULATOR_ENGINE_WORKSPACE 1
#endif

namespace leanattn::emulator {

WorkspaceLayout device_layout(const Plan& plan);

class CounterZeroing {
 public:
  // Zeroes what the engine would zero before `plan` runs on `workspace` (host memory).
  void before_run(const Plan& plan, void* workspace);
  // A new allocation at [begin, begin + bytes): nothing there is known to be zero.
  void forget(const void* begin, std::size_t bytes);

 private:
#if defined(LEANATTN_EMULATOR_ENGINE_WORKSPACE)
  cuda::WorkspaceRegistry registry_;
#else
  std::vector<std::pair<const void*, std::int64_t> > zeroed_;  // counters, bytes covered
#endif
};

}  // namespace leanattn::emulator
