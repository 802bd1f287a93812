// DecodeProblem: one decode step of one attention layer, as the planner and every executor see
// it. Shapes only, no data: the tensors travel separately (tensors.hpp). Built by the CLI, the
// Python bindings and the tests; checked by validate().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leanattn/core/ceil_div.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn {

// Where the KV cache of a request lives.
//   contiguous: k_cache, v_cache are [batch, capacity, kv_heads, head_dim] (V: head_dim_v);
//               request b's token t is at [b, t, :, :].
//   paged:      k_cache, v_cache are [num_pages, page_size, kv_heads, head_dim] (V: head_dim_v)
//               and an int32 block table [batch, max_pages] maps request b's token t to page
//               block_table[b][t / page_size], row t % page_size (the flash_attn_with_kvcache
//               layout).
// V may also be the leading head_dim_v values of K's rows (DeepSeek's absorbed MLA cache: no V
// cache of its own): DecodeTensors::v_cache = k_cache with v_strides = k_strides.
enum class KvLayout : std::uint8_t { contiguous, paged };

// The scales of a quantized (8-bit) K or V cache: dequantized value = stored x scale (FlashInfer
// and vLLM semantics), one float32 scale per block of the granularity below, K and V each with
// their own scales (DecodeTensors::k_scale, v_scale; addressing in tensors.hpp).
//   none:           16- and 32-bit caches (no scales)
//   per_tensor:     one scale for the whole cache (vLLM's k_scale / v_scale)
//   per_kv_head:    [kv_heads]
//   per_token_head: one per (token, KV head), beside the cache: contiguous [batch, capacity,
//                   kv_heads], paged [num_pages, page_size, kv_heads] through the same block table
//                   (int8 caches, as vLLM's and SGLang's per-token-head int8)
enum class KvScales : std::uint8_t { none, per_tensor, per_kv_head, per_token_head };

// "none", "per_tensor", "per_kv_head", "per_token_head"; parse_kv_scales throws Error naming
// `argument` for anything else.
std::string_view kv_scales_name(KvScales scales);
KvScales parse_kv_scales(std::string_view text, const char* argument = "kv_scales");

// The granularity each KV dtype gets by default (the CLI and the harness use it): per tensor for
// fp8, per (token, KV head) for int8, none for 16- and 32-bit caches.
constexpr KvScales default_kv_scales(DType kv_dtype) {
  if (kv_dtype == DType::int8) return KvScales::per_token_head;
  return is_quantized(kv_dtype) ? KvScales::per_tensor : KvScales::none;
}

// The attention variant of a call (docs/numerics.md, "Variants"; the per-row rules are in
// core/variant_rules.hpp). The default is plain softmax attention. Combinations are allowed.
struct AttentionVariant {
  bool causal = true;             // q_len > 1: query i sees keys up to seq_len - q_len + i
  std::int32_t window_left = -1;  // sliding window: keys within window_left positions before
                                  //   the query (flash-attn's window_size=(left, -1)); -1: none
  float softcap = 0.0f;           // logits soft-cap: s = softcap * tanh(s / softcap); 0: off
  bool sinks = false;             // DecodeTensors::sinks holds one sink logit per query head
  bool alibi = false;             // DecodeTensors::alibi_slopes holds one slope per query head
  bool bias = false;              // DecodeTensors::bias holds an additive score bias per query
                                  //   row and key (ggml's and transformers' float masks; -inf
                                  //   hides a key), in DecodeProblem::bias_dtype

  bool operator==(const AttentionVariant&) const = default;
  bool has_window() const { return window_left >= 0; }
};

// Query tokens of `request`: query_start_loc's difference, or q_len for all without it (the one
// rule DecodeProblem and Plan share).
inline std::int32_t request_query_len(const std::vector<std::int32_t>& query_start_loc,
                                      std::int32_t q_len, std::int32_t request) {
  if (query_start_loc.empty()) return q_len;
  const auto b = static_cast<std::size_t>(request);
  return query_start_loc[b + 1] - query_start_loc[b];
}

struct DecodeProblem {
  std::int32_t q_heads = 0;   // query heads; a multiple of kv_heads (GQA; MQA when kv_heads = 1)
  std::int32_t kv_heads = 0;  // key/value heads
  std::int32_t head_dim = 0;  // Q's and K's width: a multiple of 16, at most 576
  // V's and the output's width where it differs from head_dim (DeepSeek: K 192 / V 128; absorbed
  // MLA: K 576 / V 512): a multiple of 16, at most head_dim. 0: head_dim.
  std::int32_t head_dim_v = 0;
  std::int32_t q_len = 1;  // query tokens per request (the last q_len positions of the cache)
  std::vector<std::int32_t> seq_lens;  // [batch] KV tokens per request; 0 allowed (empty output)
  // Mixed batches (prefill chunks beside decode rows: vLLM's query_start_loc, FlashAttention's
  // cu_seqlens_q, FlashInfer's qo_indptr): int32 [batch + 1] prefix sums from 0; request b's
  // query tokens are the last query_start_loc[b + 1] - query_start_loc[b] positions of its cache
  // (0 allowed: the request computes nothing) and rows [query_start_loc[b], query_start_loc[b +
  // 1]) of q, out, lse and bias, whose token dimension then runs over the whole batch (their
  // batch strides unused; tensors.hpp, query_index). q_len is then a bound, >= every request's
  // count. Empty: every request has q_len query tokens.
  std::vector<std::int32_t> query_start_loc;

  KvLayout layout = KvLayout::contiguous;
  std::int64_t capacity = 0;   // contiguous: tokens per request slot (>= every seq_len)
  std::int32_t page_size = 0;  // paged: tokens per page (>= 1)
  std::int64_t num_pages = 0;  // paged: pages in the cache
  std::int32_t max_pages = 0;  // paged: columns of the block table (>= pages any request needs)

  DType q_dtype = DType::f16;           // Q and the output
  DType kv_dtype = DType::f16;          // K, and V unless v_dtype says otherwise
  KvScales kv_scales = KvScales::none;  // quantized kv_dtype: how its scales are laid out
  float scale = 0.0f;                   // softmax scale; 0 means 1 / sqrt(head_dim)
  AttentionVariant variant;             // masking, soft-cap, sinks, ALiBi, bias; plain by default
  DType bias_dtype = DType::f32;        // variant.bias: f32, f16 (ggml's mask) or bf16
  // V's type where it differs from K's (ggml allows it: llama.cpp's -ctk q8_0 with an f16 V):
  // f16, q8_0 or q4_0, with kv_dtype one of these too. Empty (or kv_dtype): V is kv_dtype.
  std::optional<DType> v_dtype;

  bool operator==(const DecodeProblem&) const = default;  // every field (ExecutorCache's memo)
  std::int32_t batch() const { return static_cast<std::int32_t>(seq_lens.size()); }
  DType value_dtype() const { return v_dtype.value_or(kv_dtype); }  // V's element type
  std::int32_t value_dim() const { return head_dim_v != 0 ? head_dim_v : head_dim; }  // V's width
  std::int32_t group_size() const { return q_heads / kv_heads; }  // query heads per KV head
  // Output rows per (request, KV head): q_len x group, row r = query (r / group), head r % group;
  // with query_start_loc, the bound (a request's own: pair_rows(b)).
  std::int32_t pair_rows() const { return q_len * group_size(); }
  bool has_query_start_loc() const { return !query_start_loc.empty(); }
  std::int32_t query_len(std::int32_t request) const {
    return request_query_len(query_start_loc, q_len, request);
  }
  std::int32_t pair_rows(std::int32_t request) const { return query_len(request) * group_size(); }
  // Request `request`'s first query token in the batch's order of query tokens (b x q_len
  // without query_start_loc): the reference's outputs are [that order, q_heads, ...].
  std::int64_t query_start(std::int32_t request) const {
    if (!has_query_start_loc()) return static_cast<std::int64_t>(request) * q_len;
    return query_start_loc[static_cast<std::size_t>(request)];
  }
  // Query tokens of the whole batch: the extent of q's, out's and lse's token dimension with
  // query_start_loc (batch x q_len without).
  std::int64_t total_queries() const;
  float softmax_scale() const;
  std::int64_t total_tokens() const;  // sum of seq_lens
  // Bytes of K and V that one decode step must read: the keys some query row sees (all of them
  // without a window) * kv_heads * (K's and V's row bytes + 2 x 4 with per-token scales). V that
  // lives in K's rows (shared_kv) is read with them: K's row bytes only.
  std::int64_t kv_bytes(bool shared_kv = false) const;
};

// The K/V element type(s) as reports print them: "q8_0", or "q8_0/f16" for K q8_0 with V f16.
std::string kv_dtypes_name(const DecodeProblem& problem);

// Limits the validators enforce (see docs/validation.md for the full table).
inline constexpr std::int32_t kMaxHeadDim = 576;  // absorbed MLA's latent + rope width
inline constexpr std::int32_t kHeadDimMultiple = 16;
inline constexpr std::int32_t kMaxHeads = 1 << 16;
inline constexpr std::int32_t kMaxBatch = 1 << 20;
inline constexpr std::int32_t kMaxQLen = 8192;     // a prefill chunk's tokens (vLLM's step budget)
inline constexpr std::int32_t kMaxCudaQLen = 256;  // the CUDA engine's bound (kernel_registry)

// Throws Error naming the first field that breaks a rule: heads positive and q_heads a multiple
// of kv_heads, head_dim a positive multiple of 16 up to 576, head_dim_v 0 or a multiple of 16 up
// to head_dim, q_len in [1, 8192], lengths >= 0,
// >= q_len when not 0 (a request's own count with query_start_loc), and within the layout's
// capacity, query_start_loc empty or batch + 1 non-decreasing prefix sums from 0 with every
// count <= q_len, layout sizes consistent, scale finite and
// >= 0, window_left >= -1, softcap finite and >= 0, q_dtype not 8-bit, kv_scales none exactly
// when kv_dtype is not 8-bit, a v_dtype other than kv_dtype only with both f16, q8_0 or q4_0,
// head_dim (and head_dim_v) a multiple of 32 where either is a block format, bias_dtype f32, f16 or
// bf16.
void validate(const DecodeProblem& problem);

// Pages of `page_size` tokens that `tokens` tokens occupy (the paged layout's block-table row).
inline std::int64_t pages_for(std::int64_t tokens, std::int32_t page_size) {
  return ceil_div<std::int64_t>(tokens, page_size);
}

}  // namespace leanattn
