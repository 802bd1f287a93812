// The CUDA engine's workspace: its byte layout (a pure function of the plan) and the engine's
// record of which workspaces have their arrival counters at zero (WorkspaceRegistry). Pure host
// code: the engine turns a ZeroRange into a cudaMemsetAsync, the CPU simulation of the protocol
// (tests/cuda/workspace_protocol_test.cpp) into a memset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "leanattn/plan.hpp"

namespace leanattn::cuda {

// Arrival counters a workspace holds (256 KiB), one per split pair of a plan: plans with more
// split pairs are refused (lean plans have at most one per worker, and kMaxWorkers = 2^16).
inline constexpr std::int64_t kWorkspaceCounters = 1 << 16;

// Where the kernel finds the workspace arrays of a plan (null when the plan needs none).
struct WorkspacePointers {
  float* slot_o = nullptr;            // [num_slots, group_size, head_dim]
  float* slot_m = nullptr;            // [num_slots, group_size]
  float* slot_l = nullptr;            // [num_slots, group_size]
  std::uint32_t* counters = nullptr;  // [reductions]
};

// The layout of a CUDA workspace for `plan`, all offsets 64-byte aligned:
//   counters  uint32 [kWorkspaceCounters]             at 0, whatever the plan
//   o         float [num_slots, group_size, head_dim]
//   m, l      float [num_slots, group_size]
// The counters' place and size do not depend on the plan, so plans of different shapes can take
// turns on one workspace: no plan's slots ever overlap the counters, which every launch leaves
// at zero. bytes is 0 when no pair is split (no workspace needed). The CPU engine keeps the
// planner's compact workspace_layout() (it zeroes its counters on every run).
WorkspaceLayout device_workspace_layout(const Plan& plan);

WorkspacePointers workspace_pointers(const Plan& plan, void* workspace);

// The same for num_slots slots of group_size rows, head_dim_v wide (a plan made on the device:
// its bound, PlannerBounds::max_slots()); never 0 bytes.
WorkspaceLayout device_workspace_layout(std::int64_t num_slots, std::int32_t group_size,
                                        std::int32_t head_dim_v);
WorkspacePointers workspace_pointers(const WorkspaceLayout& layout, void* workspace);

// Bytes of `workspace` to set to zero before a launch.
struct ZeroRange {
  std::byte* begin = nullptr;
  std::size_t bytes = 0;
};

// The workspaces whose counters are known to be zero, by base address, with the stream that
// uses each. The counter region is zeroed once per allocation (the first launch of a split plan
// on it); every launch leaves the counters it used at zero again (the last arriver resets them),
// whatever plan comes next. A workspace serves one stream: launches on one stream are ordered,
// launches on two would interleave their tickets and slots, so a second stream is refused.
class WorkspaceRegistry {
 public:
  // What to zero before `plan` runs on `workspace` from `stream`, or nullopt. `capturing`: the
  // zeroing will be recorded into a CUDA graph, not executed now, so it is not remembered as
  // done. Throws Error("workspace", ...) when another stream uses this workspace.
  std::optional<ZeroRange> before_run(const Plan& plan, void* workspace, const void* stream,
                                      bool capturing);

  // Forgets every remembered workspace overlapping [begin, begin + bytes): a new allocation there
  // holds arbitrary bytes, or the caller hands the workspace to another stream.
  void forget(const void* begin, std::size_t bytes);

  std::size_t size() const { return zeroed_.size(); }

 private:
  struct Known {
    const std::byte* base;
    const void* stream;
  };
  std::vector<Known> zeroed_;
};

}  // namespace leanattn::cuda
