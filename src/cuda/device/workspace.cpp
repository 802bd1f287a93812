// device_workspace_layout(), workspace_pointers(), WorkspaceRegistry (see workspace.hpp).
#include "cuda/device/workspace.hpp"

#include <algorithm>

namespace leanattn::cuda {

WorkspaceLayout device_workspace_layout(const Plan& plan) {
  return workspace_layout(plan);
}

WorkspacePointers workspace_pointers(const Plan& plan, void* workspace) {
  if (workspace == nullptr) return {};
  const WorkspaceLayout w = device_workspace_layout(plan);
  auto* ws = static_cast<std::byte*>(workspace);
  return {reinterpret_cast<float*>(ws + w.o_offset), reinterpret_cast<float*>(ws + w.m_offset),
          reinterpret_cast<float*>(ws + w.l_offset),
          reinterpret_cast<std::uint32_t*>(ws + w.counters_offset)};
}

std::optional<ZeroRange> WorkspaceRegistry::before_run(const Plan& plan, void* workspace,
                                                       bool capturing) {
  if (plan.reductions.empty() || workspace == nullptr) return std::nullopt;
  static_cast<void>(capturing);
  const WorkspaceLayout w = device_workspace_layout(plan);
  const std::int64_t bytes = static_cast<std::int64_t>(plan.reductions.size()) * 4;
  auto* counters = static_cast<std::byte*>(workspace) + w.counters_offset;
  for (auto& [ptr, covered] : zeroed_) {
    if (ptr == counters) {
      if (covered >= bytes) return std::nullopt;
      covered = bytes;
      return ZeroRange{counters, static_cast<std::size_t>(bytes)};
    }
  }
  zeroed_.emplace_back(counters, bytes);
  return ZeroRange{counters, static_cast<std::size_t>(bytes)};
}

void WorkspaceRegistry::forget(const void* begin, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(begin);
  std::erase_if(zeroed_,
                [&](const auto& z) { return b != nullptr && z.first >= b && z.first < b + bytes; });
}

}  // namespace leanattn::cuda
