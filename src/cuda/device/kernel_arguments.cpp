// check_kernel_alignment(), check_workspace(), make_kernel_params() (see kernel_arguments.hpp).
#include "cuda/device/kernel_arguments.hpp"

#include <cstdint>
#include <string>

#include "cuda/common/kv8_format.hpp"
#include "cuda/device/workspace.hpp"
#include "leanattn/error.hpp"

namespace leanattn::cuda {

namespace {

void require_16_bytes(const void* p, const char* argument) {
  require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, argument,
          [] { return "must be 16-byte aligned for the CUDA engine (its 16-byte row copies)"; });
}

// `elems`: elements per 16 bytes (8 for 16-bit tensors, 16 for an 8-bit cache).
void require_stride(std::int64_t stride, const char* argument, int elems = 8) {
  require(stride % elems == 0, argument, [&] {
    return "must be a multiple of " + std::to_string(elems) +
           " elements for the CUDA engine (16-byte aligned rows) (got " + std::to_string(stride) +
           ")";
  });
}

}  // namespace

void check_kernel_alignment(const DecodeProblem& p, const DecodeTensors& t) {
  // With query_start_loc the batch strides are unused (tensors.hpp: query_index).
  const bool batched = !p.has_query_start_loc();
  require_16_bytes(t.q, "q");
  if (batched) require_stride(t.q_stride_batch, "q_stride_batch");
  require_stride(t.q_stride_token, "q_stride_token");
  require_stride(t.q_stride_head, "q_stride_head");
  require_16_bytes(t.out, "out");
  if (batched) require_stride(t.out_stride_batch, "out_stride_batch");
  require_stride(t.out_stride_token, "out_stride_token");
  require_stride(t.out_stride_head, "out_stride_head");
  if (p.total_tokens() == 0) return;  // K and V are never read
  require_16_bytes(t.k_cache, "k_cache");
  require_16_bytes(t.v_cache, "v_cache");
  const int elems = static_cast<int>(16 / dtype_size(p.kv_dtype));
  require_stride(t.k_strides.outer, "k_strides.outer", elems);
  require_stride(t.k_strides.token, "k_strides.token", elems);
  require_stride(t.k_strides.head, "k_strides.head", elems);
  require_stride(t.v_strides.outer, "v_strides.outer", elems);
  require_stride(t.v_strides.token, "v_strides.token", elems);
  require_stride(t.v_strides.head, "v_strides.head", elems);
}

void check_value_source(const KernelHandle& kernel, const DecodeProblem& p,
                        const DecodeTensors& t) {
  if (!kernel.v_from_k || p.total_tokens() == 0) return;  // docs/validation.md
  require(shares_kv(t), "v_cache", [&] {
    return "must be k_cache with K's strides for the CUDA engine at head_dim " +
           std::to_string(p.head_dim) + " / head_dim_v " + std::to_string(p.value_dim()) +
           " (its kernel " + kernel.name +
           " reads V from K's rows: the absorbed MLA cache); a separate V cache of these widths "
           "runs on the CPU engine";
  });
}

void check_workspace(const Plan& plan, const void* workspace) {
  require(static_cast<std::int64_t>(plan.reductions.size()) <= kWorkspaceCounters, "plan", [&] {
    return "splits " + std::to_string(plan.reductions.size()) +
           " pairs; the CUDA engine's workspace counts arrivals for at most " +
           std::to_string(kWorkspaceCounters) + " split pairs per launch";
  });
  if (device_workspace_layout(plan).bytes == 0) return;
  require(workspace != nullptr, "workspace", [&] {
    return "must not be null: this plan splits pairs and needs " +
           std::to_string(device_workspace_layout(plan).bytes) + " bytes";
  });
  require(reinterpret_cast<std::uintptr_t>(workspace) % 16 == 0, "workspace",
          [] { return "must be 16-byte aligned"; });
}

KernelParams make_kernel_params(const DecodeProblem& p, const DecodeTensors& t, const Plan& plan,
                                const DevicePlan& dp, void* workspace) {
  return make_kernel_params(p, t, plan.tile_tokens, dp, workspace_pointers(plan, workspace));
}

KernelParams make_kernel_params(const DecodeProblem& p, const DecodeTensors& t,
                                std::int32_t tile_tokens, const DevicePlan& dp,
                                const WorkspacePointers& w) {
  require(p.has_query_start_loc() == (dp.query_start_loc != nullptr), "query_start_loc", [&] {
    return p.has_query_start_loc()
               ? "the plan's device copy is missing (a plan made on the device or for a step "
                 "takes one q_len for every request)"
               : "the plan has per-request query counts but the problem has none";
  });
  KernelParams k{};
  k.worker_offsets = dp.worker_offsets;
  k.segments = dp.segments;
  k.reductions = dp.reductions;
  k.seq_lens = dp.seq_lens;
  k.tile_tokens = tile_tokens;
  k.group_size = p.group_size() * p.q_len;  // Plan::group_size
  k.heads = p.group_size();
  k.scale = p.softmax_scale();
  k.q_len = p.q_len;
  k.query_start_loc = dp.query_start_loc;  // the plan's copy of p.query_start_loc
  k.window_left = p.variant.window_left;
  k.causal = p.variant.causal;
  k.softcap = p.variant.softcap;
  k.sinks = p.variant.sinks ? t.sinks : nullptr;
  k.alibi_slopes = p.variant.alibi ? t.alibi_slopes : nullptr;
  k.q = t.q;
  k.q_stride_batch = t.q_stride_batch;
  k.q_stride_token = t.q_stride_token;
  k.q_stride_head = t.q_stride_head;
  k.k_cache = t.k_cache;
  k.v_cache = t.v_cache;
  k.k = kv_addressing(p, t, t.k_strides);
  k.v = kv_addressing(p, t, t.v_strides);
  k.page = FastDivider::make(static_cast<std::uint32_t>(k.k.page_size > 0 ? k.k.page_size : 1));
  if (is_quantized(p.kv_dtype)) {
    k.kv_format = static_cast<std::int32_t>(kv8_format(p.kv_dtype));
    k.k_scale = t.k_scale;
    k.v_scale = t.v_scale;
    k.k_scale_at = kv_addressing(p, t, t.k_scale_strides);
    k.v_scale_at = kv_addressing(p, t, t.v_scale_strides);
  }
  k.out = t.out;
  k.out_stride_batch = t.out_stride_batch;
  k.out_stride_token = t.out_stride_token;
  k.out_stride_head = t.out_stride_head;
  k.lse = t.lse;
  k.lse_stride_batch = t.lse_stride_batch;
  k.lse_stride_token = t.lse_stride_token;
  k.slot_o = w.slot_o;
  k.slot_m = w.slot_m;
  k.slot_l = w.slot_l;
  k.counters = w.counters;
  return k;
}

}  // namespace leanattn::cuda
