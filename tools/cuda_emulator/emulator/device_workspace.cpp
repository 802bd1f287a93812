// device_layout() and CounterZeroing (see device_workspace.hpp): the engine's own rules
// (src/cuda/device/workspace.cpp) on host memory, or, before they had a file, a mirror of
// engine.cpp's zero_counters().
#include "emulator/device_workspace.hpp"

#include <cstring>

namespace leanattn::emulator {

#if defined(LEANATTN_EMULATOR_ENGINE_WORKSPACE)

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

#else

WorkspaceLayout device_layout(const Plan& plan) {
  return workspace_layout(plan);
}

void CounterZeroing::before_run(const Plan& plan, void* workspace) {
  if (plan.reductions.empty() || workspace == nullptr) return;
  const WorkspaceLayout w = device_layout(plan);
  const std::int64_t bytes = static_cast<std::int64_t>(plan.reductions.size()) * 4;
  auto* counters = static_cast<std::byte*>(workspace) + w.counters_offset;
  for (auto& [ptr, covered] : zeroed_) {
    if (ptr == counters) {
      if (covered >= bytes) return;
      std::memset(counters, 0, static_cast<std::size_t>(bytes));
      covered = bytes;
      return;
    }
  }
  std::memset(counters, 0, static_cast<std::size_t>(bytes));
  zeroed_.emplace_back(counters, bytes);
}

void CounterZeroing::forget(const void* begin, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(begin);
  std::erase_if(zeroed_, [&](const auto& z) {
    const auto* p = static_cast<const std::byte*>(z.first);
    return b != nullptr && p >= b && p < b + bytes;
  });
}

#endif

}  // namespace leanattn::emulator
