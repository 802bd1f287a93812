// FixedStep: what a decode step captured in a CUDA graph keeps for its whole life, shared by
// DevicePlannedStep (the plan written by the device planner) and HostPlannedStep (the plan made
// on the host and copied in): the shape and its bounds, the kernel, workers and tile, one
// planner buffer (planner_buffers.hpp: the plan region the decode kernel reads, and the device
// planner's scratch) and a workspace for the bound, and the decode launch over that plan
// region. Internal.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device/device_buffer.hpp"
#include "cuda/device/planner_buffers.hpp"
#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cuda {

struct FixedStep {
  Engine::Impl* engine = nullptr;
  DecodeProblem shape;
  const KernelHandle* kernel = nullptr;
  PlannerBounds bounds;
  std::int32_t tile_tokens = 0;
  // The decode kernel may be launched as the planner's programmatic dependent: the engine allows
  // it (EngineOptions::dependent_launch, sm_90) and both kernels' loaded binaries are sm_90 code
  // (a compute_80 PTX JIT-compiled on a newer GPU has no griddepcontrol.wait in it).
  bool dependent_launch = false;
  std::int32_t max_seq_len = 0;  // the shape's longest request: the bound of every length
  DeviceBuffer planner;          // planner_layout(bounds) bytes, zeroed
  PlannerLayout layout;
  WorkspaceLayout workspace_layout;
  DeviceBuffer workspace;  // for max_slots(), its counters zeroed

  // Validates the shape and options (lean, head-major; Error naming strategy, batch_invariant,
  // order or tile otherwise), looks up the kernel and allocates and zeroes the buffers; `who`
  // names the step in messages ("the device planner", "a host-planned step").
  FixedStep(Engine::Impl& engine, const DecodeProblem& shape, const PlanOptions& options,
            const char* who);

  // The tensors against the shape, the kernel's alignment and V's source: Error naming the
  // argument. Called before anything is launched.
  void check_tensors(const DecodeTensors& tensors) const;
  // Launches the decode kernel (one CTA per worker) over the plan region with `seq_lens` [batch]
  // (device) as the requests' lengths; tensors already checked. after_planner: the kernel just
  // launched on `s` is the device planner, so the decode kernel may be its programmatic
  // dependent (Engine::Impl::dependent_launch). Call with the engine's mutex held.
  void launch_decode(const DecodeTensors& tensors, const std::int32_t* seq_lens, cudaStream_t s,
                     bool after_planner = false);

  std::int64_t device_bytes() const {
    return static_cast<std::int64_t>(layout.bytes) + workspace_layout.bytes;
  }
};

}  // namespace leanattn::cuda
