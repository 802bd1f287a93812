// device_workspace_layout(), workspace_pointers(), WorkspaceRegistry (see workspace.hpp).
#include "cuda/device/workspace.hpp"

#include <algorithm>

#include "leanattn/error.hpp"

namespace leanattn::cuda {

WorkspaceLayout device_workspace_layout(std::int64_t num_slots, std::int32_t group_size,
                                        std::int32_t head_dim_v) {
  auto align = [](std::int64_t x) { return (x + 63) / 64 * 64; };
  const std::int64_t rows = num_slots * group_size;
  WorkspaceLayout w;
  w.counters_offset = 0;
  w.o_offset = kWorkspaceCounters * 4;
  w.m_offset = align(w.o_offset + rows * head_dim_v * 4);
  w.l_offset = align(w.m_offset + rows * 4);
  w.bytes = align(w.l_offset + rows * 4);
  return w;
}

WorkspaceLayout device_workspace_layout(const Plan& plan) {
  if (plan.reductions.empty()) return {};  // nothing is split: no workspace
  return device_workspace_layout(plan.num_slots, plan.group_size, plan.head_dim_v);
}

WorkspacePointers workspace_pointers(const Plan& plan, void* workspace) {
  if (workspace == nullptr) return {};
  return workspace_pointers(device_workspace_layout(plan), workspace);
}

WorkspacePointers workspace_pointers(const WorkspaceLayout& w, void* workspace) {
  if (workspace == nullptr) return {};
  auto* ws = static_cast<std::byte*>(workspace);
  return {reinterpret_cast<float*>(ws + w.o_offset), reinterpret_cast<float*>(ws + w.m_offset),
          reinterpret_cast<float*>(ws + w.l_offset),
          reinterpret_cast<std::uint32_t*>(ws + w.counters_offset)};
}

std::optional<ZeroRange> WorkspaceRegistry::before_run(const Plan& plan, void* workspace,
                                                       const void* stream, bool capturing) {
  if (plan.reductions.empty() || workspace == nullptr) return std::nullopt;
  auto* base = static_cast<std::byte*>(workspace);
  for (const Known& k : zeroed_) {
    if (k.base != base) continue;
    require(k.stream == stream, "workspace", [] {
      return "is already used by another stream: a workspace serves one stream at a time (its "
             "arrival counters and slots are shared by the launches); give each stream its own, "
             "or call Engine::forget_workspace() after synchronising the first stream";
    });
    return std::nullopt;
  }
  // During a capture the memset becomes a node of the graph: it runs at every replay, which is
  // harmless, but it has not run now, so eager launches must still zero the counters themselves.
  if (!capturing) zeroed_.push_back({base, stream});
  return ZeroRange{base, static_cast<std::size_t>(kWorkspaceCounters) * 4};
}

void WorkspaceRegistry::forget(const void* begin, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(begin);
  if (b == nullptr) return;
  constexpr auto kCounterBytes = static_cast<std::size_t>(kWorkspaceCounters) * 4;
  std::erase_if(zeroed_,
                [&](const Known& k) { return k.base < b + bytes && b < k.base + kCounterBytes; });
}

}  // namespace leanattn::cuda
