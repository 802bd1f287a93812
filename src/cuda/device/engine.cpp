// cuda::Engine, the host adapter of the CUDA engine (CUTLASS's device/ layer): device queries,
// occupancy-derived worker counts, plans, workspace bookkeeping, validation and the launch of the
// persistent decode kernel (kernel/decode_kernel.cuh) through the configuration registry.
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
#include "cuda/device/engine_impl.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/plan_cache.hpp"
#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/heuristics.hpp"

namespace leanattn::cuda {

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // clear the error so later calls start clean
    return false;
  }
  return count > 0;
}

std::int32_t current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

Engine::Engine(const EngineOptions& options) {
  validate_workers(options.workers, "occupancy");
  require(options.plan_cache_entries >= 1, "plan_cache_entries", [&] {
    return "must be at least 1 (got " + std::to_string(options.plan_cache_entries) + ")";
  });
  impl_ = std::make_unique<Impl>(static_cast<std::size_t>(options.plan_cache_entries));
  const int device = options.device < 0 ? current_device() : options.device;
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
  d.smem_per_block = static_cast<std::int32_t>(prop.sharedMemPerBlockOptin);
  impl_->workers_override = options.workers;
  impl_->dependent_launch = options.dependent_launch && d.cc_major >= 9;
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
  return why_not(problem).empty();
}

std::string Engine::why_not(const DecodeProblem& problem) const {
  return why_unsupported(problem, impl_->info.smem_per_block);
}

std::int32_t Engine::workers_for(const DecodeProblem& problem) const {
  if (impl_->workers_override > 0) return impl_->workers_override;
  const std::lock_guard lock(impl_->mutex);
  DeviceGuard guard(impl_->info.ordinal);
  const int blocks = impl_->occupancy(impl_->kernel_for(problem));
  return std::min(blocks * impl_->info.sm_count, kMaxWorkers);
}

Plan Engine::plan(const DecodeProblem& problem, const PlanOptions& options) const {
  validate(problem);
  // One pair at a time per CTA: at most one partial piece at each end of its range.
  PlanOptions o = resolve_plan_options(options, PlanTarget::gpu);
  const std::int32_t workers = workers_for(problem);
  // Many more workers than a CPU's cores: finer tiles when the work has fewer tiles than
  // workers, down to two warp steps (heuristics.hpp). Not for batch-invariant plans, whose
  // split points must not depend on the rest of the batch.
  if (o.tile_tokens == 0 && o.strategy != Strategy::head && !o.batch_invariant) {
    o.tile_tokens = gpu_tile_tokens(problem.head_dim, problem.kv_heads, problem.seq_lens, workers,
                                    kMinTileTokens);
  }
  return make_plan(problem, Hardware{workers}, o);
}

std::int64_t Engine::workspace_bytes(const Plan& plan) const {
  return device_workspace_layout(plan).bytes;
}

void Engine::prepare(const DecodeProblem& problem, const Plan& plan, void* workspace,
                     void* stream) {
  validate(problem);
  check_plan_matches(plan, problem);
  check_workspace(plan, workspace);
  const std::lock_guard lock(impl_->mutex);
  const KernelHandle& kernel = impl_->kernel_for(problem);
  DeviceGuard guard(impl_->info.ordinal);
  const auto s = static_cast<cudaStream_t>(stream);
  const bool capturing = is_capturing(s);
  impl_->occupancy(kernel);
  impl_->device_plan(plan, s, capturing);
  impl_->zero_counters(plan, workspace, s, capturing);
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                 void* workspace, void* stream) {
  const std::lock_guard lock(impl_->mutex);
  DeviceGuard guard(impl_->info.ordinal);
  const auto s = static_cast<cudaStream_t>(stream);
  impl_->run(problem, plan, tensors, workspace, s, is_capturing(s));
}

void* Engine::Impl::owned_workspace(const Plan& plan, void* stream, bool capturing) {
  const auto need = static_cast<std::size_t>(device_workspace_layout(plan).bytes);
  Owned& own = owned[stream];
  if (own.buffer.size() < need) {
    require(!capturing, "workspace", [&] {
      return "the engine's workspace for this stream must grow to " + std::to_string(need) +
             " bytes, which cannot happen during a CUDA-graph capture: run() once before the "
             "capture, or pass a workspace";
    });
    workspaces.forget(own.buffer.data(), own.buffer.size());
    if (own.captured) {
      retired.push_back(std::move(own.buffer));  // a graph may still read it
    } else {
      own.buffer = DeviceBuffer();  // cudaFree waits for the launches that use it
    }
    own.buffer = DeviceBuffer(grown(need));
    own.captured = false;
    // A user workspace remembered at these addresses was freed: this memory is not zeroed.
    workspaces.forget(own.buffer.data(), own.buffer.size());
  }
  own.captured = own.captured || (capturing && need > 0);
  return own.buffer.data();
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                 void* stream) {
  const std::lock_guard lock(impl_->mutex);
  DeviceGuard guard(impl_->info.ordinal);
  const auto s = static_cast<cudaStream_t>(stream);
  const bool capturing = is_capturing(s);
  void* workspace = impl_->owned_workspace(plan, stream, capturing);
  impl_->run(problem, plan, tensors, workspace, s, capturing);
}

std::vector<CtaTrace> Engine::run_traced(const DecodeProblem& problem, const Plan& plan,
                                         const DecodeTensors& tensors, void* stream) {
  const std::lock_guard lock(impl_->mutex);
  DeviceGuard guard(impl_->info.ordinal);
  const auto s = static_cast<cudaStream_t>(stream);
  require(!is_capturing(s), "stream", [] { return "must not be capturing for a traced run"; });
  void* workspace = impl_->owned_workspace(plan, stream, false);
  const auto words = static_cast<std::size_t>(plan.workers) * kTraceWords;
  DeviceBuffer trace(words * sizeof(std::uint64_t));
  impl_->run(problem, plan, tensors, workspace, s, false, trace.as<std::uint64_t>());
  std::vector<std::uint64_t> host(words);
  check(cudaMemcpyAsync(host.data(), trace.data(), words * sizeof(std::uint64_t),
                        cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync (trace)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize (traced run)");
  std::vector<CtaTrace> out(static_cast<std::size_t>(plan.workers));
  for (std::size_t w = 0; w < out.size(); ++w) {
    const std::uint64_t* t = host.data() + w * kTraceWords;
    out[w] = {static_cast<std::int32_t>(t[0]), static_cast<std::int64_t>(t[1]),
              static_cast<std::int64_t>(t[2]), static_cast<std::int64_t>(t[3])};
  }
  return out;
}

void Engine::decode(const DecodeProblem& problem, const DecodeTensors& tensors, void* stream,
                    const PlanOptions& options) {
  run(problem, plan(problem, options), tensors, stream);
}

void Engine::forget_workspace(void* workspace) {
  const std::lock_guard lock(impl_->mutex);
  impl_->workspaces.forget(workspace, 1);
}

void Engine::clear_plan_cache() {
  const std::lock_guard lock(impl_->mutex);
  DeviceGuard guard(impl_->info.ordinal);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before freeing plans)");
  impl_->plans.clear();
}

}  // namespace leanattn::cuda
