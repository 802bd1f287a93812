// The plain data the decode kernel receives: the plan in its device form (DeviceSegment,
// DeviceReduction; built by device/plan_image.cpp, uploaded by device/plan_cache.cpp) and
// KernelParams, the kernel's single by-value argument (built by device/engine.cpp). No CUDA
// types, so the host adapter compiles with the C++ compiler and the CPU tests can build these.
#pragma once

#include <cstdint>

#include "cuda/common/kv_rows.hpp"
#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cuda {

// A Segment (plan.hpp) as the kernel reads it: its tiles as the key positions
// Plan::tile_keys(request, tile_begin, tile_end) (from the request's first planned key: a sliding
// window starts after 0), computed on the host so that the first copies of a segment wait for one
// load, not three. slot < 0: a direct segment
// (writes the output); otherwise the piece's state goes to workspace slot `slot` and `reduction`
// names the pair's Reduction.
struct DeviceSegment {
  std::int32_t request;
  std::int32_t kv_head;
  std::int32_t token_begin;
  std::int32_t token_end;  // token_end <= token_begin: no tokens (an empty request)
  std::int32_t slot;
  std::int32_t reduction;
};

// A Reduction: merge slots [slot_begin, slot_begin + num_slots) in this order into the output
// rows of (request, kv_head).
struct DeviceReduction {
  std::int32_t request;
  std::int32_t kv_head;
  std::int32_t slot_begin;
  std::int32_t num_slots;
};

inline constexpr int kTraceWords = 4;

struct KernelParams {
  // The plan (device memory, one upload per distinct plan).
  const std::int32_t* worker_offsets;  // [workers + 1]: CTA w runs segments [w], [w + 1])
  const DeviceSegment* segments;       // [segments]
  const DeviceReduction* reductions;   // [reductions]
  const std::int32_t* seq_lens;        // [batch]
  std::int32_t tile_tokens;
  std::int32_t group_size;  // rows per pair = q_len x heads (Plan::group_size; with
                            //   query_start_loc the bound and a workspace slot's row stride, a
                            //   request's own rows fewer: request_queries); row r is query token
                            //   r / heads, query head kv_head * heads + r % heads (pair_row)
  std::int32_t heads;       // query heads per KV head (the GQA group)
  float scale;              // softmax scale, applied to q.k in fp32

  // The attention variant (AttentionVariant; per-row rules in core/variant_rules.hpp).
  std::int32_t q_len;  // query tokens per request (the last q_len positions; with
                       //   query_start_loc the bound)
  // Per-request query tokens (DecodeProblem::query_start_loc, device memory: the plan image's
  // copy), [batch + 1] prefix sums, or null: every request has q_len. With it q, out and lse are
  // [total query tokens, ...] and their batch strides unused (row_rules.hpp: request_queries).
  const std::int32_t* query_start_loc;
  std::int32_t window_left;  // -1: no window
  bool causal;
  float softcap;              // 0: off
  const float* sinks;         // [q_heads] sink logit per query head, or null
  const float* alibi_slopes;  // [q_heads] ALiBi slope per query head, or null

  // Tensors (device memory; layouts in tensors.hpp; element strides).
  const void* q;  // [batch, q_len, q_heads, head_dim] (query_start_loc: [tokens, q_heads, ...])
  std::int64_t q_stride_batch;
  std::int64_t q_stride_token;
  std::int64_t q_stride_head;
  const void* k_cache;  // contiguous [batch, capacity, kv_heads, head_dim] or paged
  const void* v_cache;  //   [num_pages, page_size, kv_heads, head_dim]; see KvAddressing; V's
                        //   rows head_dim_v wide (unread where the kernel takes V from K's rows)
  KvAddressing k;
  KvAddressing v;
  FastDivider page;  // paged: division by page_size (shared by K and V)
  // An 8-bit cache (the kernels of kv_bits 8; unused by the others): its format and float32
  // scales (value = stored x scale), addressed like the cache with the scales' strides
  // (DecodeTensors::k_scale_strides: all 0 per tensor, head 1 per KV head).
  std::int32_t kv_format;  // Kv8Format
  const float* k_scale;
  const float* v_scale;
  KvAddressing k_scale_at;
  KvAddressing v_scale_at;
  void* out;  // [batch, q_len, q_heads, head_dim_v], Q's dtype
  std::int64_t out_stride_batch;
  std::int64_t out_stride_token;
  std::int64_t out_stride_head;
  float* lse;  // optional [batch, q_len, q_heads]
  std::int64_t lse_stride_batch;
  std::int64_t lse_stride_token;

  // Workspace (workspace_layout(plan)).
  float* slot_o;            // [num_slots, group_size, head_dim_v] unnormalised partial outputs
  float* slot_m;            // [num_slots, group_size]
  float* slot_l;            // [num_slots, group_size]
  std::uint32_t* counters;  // [reductions] arrivals; every launch leaves them 0

  // Optional per-CTA trace (null: none): [workers][kTraceWords] = SM id, start ns, end ns,
  // ns spent in last-arriver merges (global timer).
  std::uint64_t* trace;
};

}  // namespace leanattn::cuda
