// Engine::Impl, the CUDA engine's state (device, plan cache, workspaces, kernels' occupancy) and
// its launch path, shared by engine.cpp and device_planned_step.cpp (a step planned on the
// device launches through the same kernel lookup, occupancy and validation). Internal.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/device/cuda_check.hpp"
#include "cuda/device/device_buffer.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/plan_cache.hpp"
#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"

namespace leanattn::cuda {

namespace engine_detail {

inline constexpr std::int32_t kMinTileTokens = 32;

inline bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  return capture != cudaStreamCaptureStatusNone;
}

// Engine-owned workspaces grow to a power of two (fewer regrowths in serving).
inline std::size_t grown(std::size_t need) {
  std::size_t n = std::size_t{1} << 20;
  while (n < need) n *= 2;
  return n;
}

}  // namespace engine_detail

using engine_detail::grown;
using engine_detail::is_capturing;
using engine_detail::kMinTileTokens;

// Every member is guarded by `mutex`: the engine may be called from several host threads (each
// call holds the lock while it validates, uploads and launches; the kernel runs asynchronously).
struct Engine::Impl {
  DeviceInfo info;
  std::int32_t workers_override = 0;
  bool dependent_launch = false;  // EngineOptions::dependent_launch where the device has it
  std::mutex mutex;
  PlanCache plans;
  WorkspaceRegistry workspaces;  // workspaces whose counters this engine has zeroed
  // The engine-owned workspace of each stream (a workspace serves one stream at a time), and
  // the grown-out buffers that a captured graph may still read (freed with the engine).
  struct Owned {
    DeviceBuffer buffer;
    bool captured = false;
  };
  std::unordered_map<void*, Owned> owned;
  std::vector<DeviceBuffer> retired;
  // Kernels whose shared-memory limit is raised, with their resident blocks per SM.
  std::unordered_map<const void*, int> blocks_per_sm;

  explicit Impl(std::size_t plan_cache_entries) : plans(plan_cache_entries) {}

  // The engine-owned workspace of `stream`, grown for `plan` (outside a capture only).
  void* owned_workspace(const Plan& plan, void* stream, bool capturing);

  // Raises the kernel's dynamic shared-memory limit (once) and returns its occupancy.
  int occupancy(const KernelHandle& k) {
    if (auto it = blocks_per_sm.find(k.kernel); it != blocks_per_sm.end()) return it->second;
    check(cudaFuncSetAttribute(k.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem_bytes),
          ("cudaFuncSetAttribute (decode kernel " + k.name + ")").c_str());
    int blocks = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.kernel, k.threads,
                                                        static_cast<std::size_t>(k.smem_bytes)),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (blocks < 1) {
      throw CudaError("leanattn::cuda: decode kernel " + k.name + " (" +
                          std::to_string(k.smem_bytes) + " bytes of shared memory) cannot run on " +
                          info.name,
                      0);
    }
    blocks_per_sm.emplace(k.kernel, blocks);
    return blocks;
  }

  // Zeroes the counters of `workspace` unless this engine already has (a zeroing issued during
  // a capture exists only in the graph: not remembered as done).
  void zero_counters(const Plan& plan, void* workspace, cudaStream_t stream, bool capturing) {
    if (auto z = workspaces.before_run(plan, workspace, stream, capturing)) {
      check(cudaMemsetAsync(z->begin, 0, z->bytes, stream), "cudaMemsetAsync (workspace counters)");
    }
  }

  const KernelHandle& kernel_for(const DecodeProblem& problem) const {
    const KernelHandle* k = find_kernel(problem, info.smem_per_block);
    if (k == nullptr) {
      const std::string why = why_unsupported(problem, info.smem_per_block);
      const auto colon = why.find(": ");
      throw Error(why.substr(0, colon), why.substr(colon + 2));
    }
    return *k;
  }

  DevicePlan device_plan(const Plan& plan, cudaStream_t stream, bool capturing) {
    if (std::optional<DevicePlan> dp = plans.find(plan)) return *dp;
    require(!capturing, "plan", [] {
      return "must be prepared with Engine::prepare() before a CUDA-graph capture (its upload "
             "cannot be captured)";
    });
    return plans.upload(plan, stream);
  }

  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void* workspace, cudaStream_t s, bool capturing, std::uint64_t* trace = nullptr) {
    validate(problem);
    validate(problem, tensors, MemorySpace::device);
    check_plan_matches(plan, problem);
    const KernelHandle& kernel = kernel_for(problem);
    check_kernel_alignment(problem, tensors);
    check_value_source(kernel, problem, tensors);
    check_workspace(plan, workspace);

    const DevicePlan dp = device_plan(plan, s, capturing);
    zero_counters(plan, workspace, s, capturing);
    occupancy(kernel);  // raises the shared-memory limit on first use

    KernelParams params = make_kernel_params(problem, tensors, plan, dp, workspace);
    params.trace = trace;
    void* args[] = {&params};
    plans.before_launch(s, capturing);
    // An error left by an earlier, unrelated call would otherwise be reported as this launch's.
    static_cast<void>(cudaGetLastError());
    cudaError_t launched =
        cudaLaunchKernel(kernel.kernel, dim3(static_cast<unsigned>(plan.workers)),
                         dim3(static_cast<unsigned>(kernel.threads)), args,
                         static_cast<std::size_t>(kernel.smem_bytes), s);
    if (launched == cudaSuccess) launched = cudaGetLastError();
    if (launched != cudaSuccess) {
      check(launched, ("cudaLaunchKernel (decode kernel " + kernel.name + ")").c_str());
    }
    plans.launched(s, capturing);
  }
};

}  // namespace leanattn::cuda
