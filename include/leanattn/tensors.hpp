// DecodeTensors: the data of one decode step as raw pointers plus element strides, so that
// executors take views of the caller's memory (NumPy, PyTorch, an engine's KV cache) without
// copies. The innermost (head_dim) dimension is always contiguous. Filled by the caller, usually
// through dense_tensors(); checked by validate(problem, tensors).
#pragma once

#include <cstdint>

#include "leanattn/core/kv_addressing.hpp"
#include "leanattn/problem.hpp"

namespace leanattn {

// Strides of a K or V cache, in elements (in bytes for the block formats q8_0 and q4_0, whose
// rows of head_dim / 32 blocks may start at any byte: dtype_size, row_units in dtype.hpp).
//   contiguous [batch, capacity, kv_heads, head_dim]: outer = batch, token = capacity row.
//   paged      [num_pages, page_size, kv_heads, head_dim]: outer = page, token = row in page.
struct KvStrides {
  std::int64_t outer = 0;
  std::int64_t token = 0;
  std::int64_t head = 0;
};

struct DecodeTensors {
  // q, out, lse and bias are [batch, q_len, ...] per query token; with query_start_loc [total
  // query tokens, ...] (their batch strides unused): query_index() says where a row lives.
  const void* q = nullptr;  // [batch, q_len, q_heads, head_dim] in problem.q_dtype
  std::int64_t q_stride_batch = 0;
  std::int64_t q_stride_head = 0;
  std::int64_t q_stride_token = 0;  // between the q_len query tokens of a request

  const void* k_cache = nullptr;  // see KvLayout, in problem.kv_dtype
  // As k_cache, rows of head_dim_v values; or k_cache itself with v_strides = k_strides, V then
  // the leading head_dim_v values of K's rows (absorbed MLA's latent cache: dense_tensors() with
  // a null v_cache; an 8-bit cache then takes v_scale = k_scale).
  const void* v_cache = nullptr;
  KvStrides k_strides;
  KvStrides v_strides;

  // Quantized caches (problem.kv_scales != none): float32 scales, value = stored x scale, for
  // element [outer, token, head, :] at outer * strides.outer + token * strides.token + head *
  // strides.head (in floats; paged caches address them through the block table like the cache):
  //   per_tensor [1]: strides 0, 0, 0;  per_kv_head [kv_heads]: 0, 0, 1 (head >= 0 any);
  //   per_token_head: contiguous [batch, capacity, kv_heads], paged [num_pages, page_size,
  //   kv_heads] (dense_tensors: capacity * kv_heads or page_size * kv_heads, kv_heads, 1).
  // Null for 16- and 32-bit caches.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  KvStrides k_scale_strides;
  KvStrides v_scale_strides;

  const std::int32_t* block_table = nullptr;  // paged only: [batch, max_pages]
  std::int64_t block_table_stride = 0;        // elements between rows

  void* out = nullptr;  // [batch, q_len, q_heads, head_dim_v] in problem.q_dtype
  std::int64_t out_stride_batch = 0;
  std::int64_t out_stride_head = 0;
  std::int64_t out_stride_token = 0;

  float* lse = nullptr;  // optional [batch, q_len, q_heads]: natural-log sum of exp(scores)
  std::int64_t lse_stride_batch = 0;
  std::int64_t lse_stride_token = 0;  // the q_heads of a token are contiguous

  // Variants (problem.variant.sinks / .alibi): float32 [q_heads], contiguous; null otherwise.
  const float* sinks = nullptr;         // sink logit per query head (same scale as the scores)
  const float* alibi_slopes = nullptr;  // ALiBi slope per query head

  // Variant bias (problem.variant.bias), in problem.bias_dtype: the score of request b's query i
  // (of the q_len), query head h, key j (the request's own key index, 0..seq_len-1, whatever
  // the layout) gets bias[b * bias_stride_batch + i * bias_stride_token + h * bias_stride_head +
  // j] added (after the soft-cap, with ALiBi's), so -inf hides the key. Keys are contiguous;
  // stride 0 broadcasts (llama.cpp's mask is shared by the heads). A row whose every key is
  // hidden gives output 0 and lse -inf, as an empty request. Null without the variant.
  const void* bias = nullptr;
  std::int64_t bias_stride_batch = 0;
  std::int64_t bias_stride_token = 0;
  std::int64_t bias_stride_head = 0;
};

// Where request b's query token i (0 <= i < problem.query_len(b)) lives in q, out, lse and
// bias: `batch` in their batch dimension, `token` in their token dimension. (b, i) without
// query_start_loc; (0, query_start_loc[b] + i) with it. The one place executors make it.
struct QueryIndex {
  std::int64_t batch = 0;
  std::int64_t token = 0;
};
inline QueryIndex query_index(const DecodeProblem& problem, std::int32_t b, std::int32_t i) {
  if (!problem.has_query_start_loc()) return {b, i};
  return {0, problem.query_start(b) + i};
}

// Where the rows of K (strides = tensors.k_strides) or V (tensors.v_strides) live: the one place
// a KvAddressing (core/kv_addressing.hpp) is made from a problem and its tensors.
inline KvAddressing kv_addressing(const DecodeProblem& problem, const DecodeTensors& tensors,
                                  const KvStrides& strides) {
  return KvAddressing{
      strides.outer,       strides.token,
      strides.head,        problem.layout == KvLayout::paged ? problem.page_size : 0,
      tensors.block_table, tensors.block_table_stride};
}

// Dense (packed, row-major) strides for every tensor of `problem`, the scales' included (their
// pointers stay null: set k_scale and v_scale for a quantized cache). v_cache null: V is the
// leading head_dim_v values of K's rows (v_cache = k_cache, v_strides = k_strides).
DecodeTensors dense_tensors(const DecodeProblem& problem, const void* q, const void* k_cache,
                            const void* v_cache, const std::int32_t* block_table, void* out,
                            float* lse);

// Whether V is read from K's rows (v_cache == k_cache with the same strides): the absorbed MLA
// cache, whose bytes are read once for both products (DecodeProblem::kv_bytes(shared_kv)).
inline bool shares_kv(const DecodeTensors& t) {
  return t.k_cache != nullptr && t.v_cache == t.k_cache && t.v_strides.outer == t.k_strides.outer &&
         t.v_strides.token == t.k_strides.token && t.v_strides.head == t.k_strides.head;
}

// Where the tensors live. Host memory is fully checked; device memory (the CUDA engine) is
// checked for everything the host can see without reading it (pointers, strides, alignment).
enum class MemorySpace : std::uint8_t { host, device };

// Throws Error naming the first tensor argument that breaks a rule: required pointers present,
// strides >= 0 (0 broadcasts an input), output rows that do not overlap, sinks and alibi_slopes
// present exactly when the variant uses them, bias present exactly with variant.bias (strides >=
// 0, aligned to bias_dtype), k_scale and v_scale present exactly for a quantized
// cache with strides that fit problem.kv_scales, V read from K's rows (shares_kv) only as K's
// type, pointers aligned to the element size, and (host
// memory only) block-table entries in [0, num_pages) for every page a request uses and every
// scale a request uses finite and > 0. Repeated block-table entries are allowed (K and V are only
// read: prefix sharing).
void validate(const DecodeProblem& problem, const DecodeTensors& tensors,
              MemorySpace space = MemorySpace::host);

}  // namespace leanattn
