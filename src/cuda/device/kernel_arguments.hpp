// From the public description of a run (problem, tensors, uploaded plan, workspace) to the
// kernel's argument (KernelParams), with the rules the CUDA kernel adds to validate(): 16-byte
// aligned rows for its 16-byte copies, V in K's rows for a configuration that reads it there.
// Pure host code, so tests/cuda/host_adapter_test.cpp checks
// it without a GPU. Called by Engine::run (engine.cpp).
#pragma once

#include "cuda/common/kernel_params.hpp"
#include "cuda/device/plan_cache.hpp"
#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cuda {

// Throws Error naming the tensor argument unless q, out, k_cache and v_cache start on 16 bytes and
// all their strides are multiples of 8 elements (every row 16-byte aligned).
void check_kernel_alignment(const DecodeProblem& problem, const DecodeTensors& tensors);

// Throws Error("v_cache", ...) when `kernel` reads V from K's rows (absorbed MLA's K 576 / V 512)
// and the tensors do not share them (shares_kv: v_cache = k_cache with K's strides, or a null
// v_cache given to dense_tensors).
void check_value_source(const KernelHandle& kernel, const DecodeProblem& problem,
                        const DecodeTensors& tensors);

// Throws Error("workspace", ...) unless the workspace is present and 16-byte aligned when the
// plan needs one.
void check_workspace(const Plan& plan, const void* workspace);

// The kernel argument. workspace: workspace_layout(plan) bytes (may be null when 0).
KernelParams make_kernel_params(const DecodeProblem& problem, const DecodeTensors& tensors,
                                const Plan& plan, const DevicePlan& device_plan, void* workspace);
// The same for a plan that lives only on the device (the device planner's buffers), of
// tile_tokens tiles, with its workspace's arrays.
KernelParams make_kernel_params(const DecodeProblem& problem, const DecodeTensors& tensors,
                                std::int32_t tile_tokens, const DevicePlan& device_plan,
                                const WorkspacePointers& workspace);

}  // namespace leanattn::cuda
