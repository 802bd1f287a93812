// device_layout() and CounterZeroing (see device_workspace.hpp): engine.cpp's zero_counters() on
// host memory.
#include "emulator/device_workspace.hpp"

#include <cstring>

namespace leanattn::emulator {

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

}  // namespace leanattn::emulator
