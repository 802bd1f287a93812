// device_layout() and CounterZeroing (see device_workspace.hpp): the engine's own rules
// (src/cuda/device/workspace.cpp) on host memory.
#include "emulator/device_workspace.hpp"

#include <cstring>

namespace leanattn::emulator {

WorkspaceLayout device_layout(const Plan& plan) {
  return cuda::device_workspace_layout(plan);
}

void CounterZeroing::before_run(const Plan& plan, void* workspace) {
  if (const auto z = registry_.before_run(plan, workspace, nullptr, false)) {
    std::memset(z->begin, 0, z->bytes);
  }
}

void CounterZeroing::forget(const void* begin, std::size_t bytes) {
  registry_.forget(begin, bytes);
}

}  // namespace leanattn::emulator
