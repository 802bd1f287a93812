// The CUDA engine's workspace: its byte layout (a pure function of the plan) and the engine's
// record of which workspaces have their arrival counters at zero (WorkspaceRegistry). Pure host
// code: the engine turns a ZeroRange into a cudaMemsetAsync, the CPU simulation of the protocol
// (tests/cuda/workspace_protocol_test.cpp) into a memset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "leanattn/plan.hpp"

namespace leanattn::cuda {

// Arrival counters a workspace holds: plans with more split pairs are refused.
inline constexpr std::int64_t kWorkspaceCounters = 1 << 16;

// Where the kernel finds the workspace arrays of a plan (null when the plan needs none).
struct WorkspacePointers {
  float* slot_o = nullptr;            // [num_slots, group_size, head_dim]
  float* slot_m = nullptr;            // [num_slots, group_size]
  float* slot_l = nullptr;            // [num_slots, group_size]
  std::uint32_t* counters = nullptr;  // [reductions]
};

// The layout of a CUDA workspace for `plan` (bytes 0 when no pair is split).
WorkspaceLayout device_workspace_layout(const Plan& plan);

WorkspacePointers workspace_pointers(const Plan& plan, void* workspace);

// Bytes of `workspace` to set to zero before a launch.
struct ZeroRange {
  std::byte* begin = nullptr;
  std::size_t bytes = 0;
};

// The workspaces whose counters are known to be zero. Every launch leaves the counters it used
// at zero (the last arriver resets them), so a workspace needs zeroing once.
class WorkspaceRegistry {
 public:
  // What to zero before `plan` runs on `workspace`, or nullopt. `capturing`: the zeroing will
  // be recorded into a CUDA graph, not executed now, so it is not remembered as done.
  std::optional<ZeroRange> before_run(const Plan& plan, void* workspace, bool capturing);

  // Forgets every remembered workspace overlapping [begin, begin + bytes): a new allocation there
  // holds arbitrary bytes.
  void forget(const void* begin, std::size_t bytes);

  std::size_t size() const { return zeroed_.size(); }

 private:
  std::vector<std::pair<const std::byte*, std::int64_t>> zeroed_;  // counters, bytes covered
};

}  // namespace leanattn::cuda
