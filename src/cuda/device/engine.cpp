// cuda::Engine, the host adapter of the CUDA engine (CUTLASS's device/ layer): device queries,
// occupancy-derived worker counts, plans, workspace bookkeeping, validation and the launch of the
// persistent decode kernel (kernel/decode_kernel.cuh) through the configuration registry.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
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

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // clear the error so later calls start clean
    return false;
  }
  return count > 0;
}

struct Engine::Impl {
  DeviceInfo info;
  std::int32_t workers_override = 0;
  PlanCache plans;
  DeviceBuffer owned_workspace;
  WorkspaceRegistry workspaces;  // workspaces whose counters this engine has zeroed
  // Kernels whose shared-memory limit is raised, with their resident blocks per SM.
  std::unordered_map<const void*, int> blocks_per_sm;

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

  // Zeroes the counters of `workspace` for `plan` unless this engine already has.
  // A zeroing issued during a capture exists only in the graph: not remembered as done.
  void zero_counters(const Plan& plan, void* workspace, cudaStream_t stream) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    if (auto z = workspaces.before_run(plan, workspace, capture != cudaStreamCaptureStatusNone)) {
      check(cudaMemsetAsync(z->begin, 0, z->bytes, stream), "cudaMemsetAsync (workspace counters)");
    }
  }

  const KernelHandle& kernel_for(const DecodeProblem& problem) const {
    const KernelHandle* k = find_kernel(problem);
    if (k == nullptr) {
      const std::string why = why_unsupported(problem);
      const auto colon = why.find(": ");
      throw Error(why.substr(0, colon), why.substr(colon + 2));
    }
    return *k;
  }
};

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  require(options.workers >= 0 && options.workers <= kMaxWorkers, "workers", [&] {
    return "must be in [0, " + std::to_string(kMaxWorkers) + "] (0 = occupancy) (got " +
           std::to_string(options.workers) + ")";
  });
  int device = options.device;
  if (device < 0) check(cudaGetDevice(&device), "cudaGetDevice");
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  DeviceInfo& d = impl_->info;
  d.ordinal = device;
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  d.smem_per_sm = static_cast<std::int32_t>(prop.sharedMemPerMultiprocessor);
  impl_->workers_override = options.workers;
  if (d.cc_major < 8) {
    throw CudaError("leanattn::cuda: " + d.name + " has compute capability " +
                        std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
                        "; the CUDA engine needs 8.0 or later (cp.async, bf16 mma)",
                    0);
  }
}

Engine::~Engine() = default;

const DeviceInfo& Engine::device() const {
  return impl_->info;
}

bool Engine::can_run(const DecodeProblem& problem) const {
  return why_unsupported(problem).empty();
}

std::string Engine::why_not(const DecodeProblem& problem) const {
  return why_unsupported(problem);
}

std::int32_t Engine::workers_for(const DecodeProblem& problem) const {
  if (impl_->workers_override > 0) return impl_->workers_override;
  DeviceGuard guard(impl_->info.ordinal);
  const int blocks = impl_->occupancy(impl_->kernel_for(problem));
  return std::min(blocks * impl_->info.sm_count, kMaxWorkers);
}

Plan Engine::plan(const DecodeProblem& problem, const PlanOptions& options) const {
  validate(problem);
  PlanOptions o = options;
  // One pair at a time per CTA: at most one partial piece at each end of its range.
  if (o.strategy == Strategy::lean && o.order == LineOrder::automatic) {
    o.order = LineOrder::head_major;
  }
  return make_plan(problem, Hardware{workers_for(problem)}, o);
}

std::int64_t Engine::workspace_bytes(const Plan& plan) const {
  return device_workspace_layout(plan).bytes;
}

void Engine::prepare(const DecodeProblem& problem, const Plan& plan, void* workspace,
                     void* stream) {
  validate(problem);
  check_plan_matches(plan, problem);
  const KernelHandle& kernel = impl_->kernel_for(problem);
  check_workspace(plan, workspace);
  DeviceGuard guard(impl_->info.ordinal);
  impl_->occupancy(kernel);
  impl_->plans.upload(plan);
  impl_->zero_counters(plan, workspace, static_cast<cudaStream_t>(stream));
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                 void* workspace, void* stream) {
  validate(problem);
  validate(problem, tensors, MemorySpace::device);
  check_plan_matches(plan, problem);
  const KernelHandle& kernel = impl_->kernel_for(problem);
  check_kernel_alignment(problem, tensors);
  check_workspace(plan, workspace);

  DeviceGuard guard(impl_->info.ordinal);
  const auto s = static_cast<cudaStream_t>(stream);
  std::optional<DevicePlan> dp = impl_->plans.find(plan);
  if (!dp) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(s, &capture), "cudaStreamIsCapturing");
    require(capture == cudaStreamCaptureStatusNone, "plan", [] {
      return "must be prepared with Engine::prepare() before a CUDA-graph capture (its upload "
             "cannot be captured)";
    });
    dp = impl_->plans.upload(plan);
  }
  impl_->zero_counters(plan, workspace, s);
  impl_->occupancy(kernel);  // raises the shared-memory limit on first use

  KernelParams params = make_kernel_params(problem, tensors, plan, *dp, workspace);
  void* args[] = {&params};
  cudaError_t launched = cudaLaunchKernel(kernel.kernel, dim3(static_cast<unsigned>(plan.workers)),
                                          dim3(static_cast<unsigned>(kernel.threads)), args,
                                          static_cast<std::size_t>(kernel.smem_bytes), s);
  if (launched == cudaSuccess) launched = cudaGetLastError();
  if (launched != cudaSuccess) {
    check(launched, ("cudaLaunchKernel (decode kernel " + kernel.name + ")").c_str());
  }
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                 void* stream) {
  const auto need = static_cast<std::size_t>(device_workspace_layout(plan).bytes);
  if (impl_->owned_workspace.size() < need) {
    DeviceGuard guard(impl_->info.ordinal);
    // The old buffer may still be in use by queued launches: cudaFree waits for the device.
    impl_->workspaces.forget(impl_->owned_workspace.data(), impl_->owned_workspace.size());
    impl_->owned_workspace = DeviceBuffer();
    impl_->owned_workspace = DeviceBuffer(need);
    // A user workspace remembered at these addresses was freed: this memory is not zeroed.
    impl_->workspaces.forget(impl_->owned_workspace.data(), impl_->owned_workspace.size());
  }
  run(problem, plan, tensors, impl_->owned_workspace.data(), stream);
}

void Engine::decode(const DecodeProblem& problem, const DecodeTensors& tensors, void* stream,
                    const PlanOptions& options) {
  run(problem, plan(problem, options), tensors, stream);
}

void Engine::clear_plan_cache() {
  DeviceGuard guard(impl_->info.ordinal);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before freeing plans)");
  impl_->plans.clear();
}

}  // namespace leanattn::cuda
