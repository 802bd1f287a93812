// Dense strides and the tensor validator. Called by the executors before they read any input.
#include "leanattn/tensors.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "leanattn/error.hpp"

namespace leanattn {

namespace {

KvStrides dense_scale_strides(const DecodeProblem& p) {
  switch (p.kv_scales) {
    case KvScales::none:
    case KvScales::per_tensor:
      return {};
    case KvScales::per_kv_head:
      return {0, 0, 1};
    case KvScales::per_token_head:
      return {p.kv_heads * (p.layout == KvLayout::contiguous ? p.capacity : p.page_size),
              p.kv_heads, 1};
  }
  return {};
}

}  // namespace

DecodeTensors dense_tensors(const DecodeProblem& p, const void* q, const void* k_cache,
                            const void* v_cache, const std::int32_t* block_table, void* out,
                            float* lse) {
  DecodeTensors t;
  const std::int64_t d = p.head_dim;
  t.q = q;
  t.q_stride_head = d;
  t.q_stride_token = static_cast<std::int64_t>(p.q_heads) * d;
  // With query_start_loc the token dimension spans the batch: batch strides 0 (unused).
  const std::int64_t per_request = p.has_query_start_loc() ? 0 : p.q_len;
  t.q_stride_batch = t.q_stride_token * per_request;
  t.k_cache = k_cache;
  t.v_cache = v_cache;
  // A row of head_dim (V: head_dim_v) values is row_units (a block format's: bytes) long.
  auto dense = [&](DType type, std::int64_t width) {
    KvStrides kv;
    kv.head = row_units(type, width);
    kv.token = static_cast<std::int64_t>(p.kv_heads) * kv.head;
    kv.outer = kv.token * (p.layout == KvLayout::contiguous ? p.capacity : p.page_size);
    return kv;
  };
  t.k_strides = dense(p.kv_dtype, d);
  t.v_strides = dense(p.value_dtype(), p.value_dim());
  if (v_cache == nullptr) {  // V in K's rows
    t.v_cache = k_cache;
    t.v_strides = t.k_strides;
  }
  t.k_scale_strides = dense_scale_strides(p);
  t.v_scale_strides = t.k_scale_strides;
  t.block_table = block_table;
  t.block_table_stride = p.max_pages;
  t.out = out;
  t.out_stride_head = p.value_dim();
  t.out_stride_token = static_cast<std::int64_t>(p.q_heads) * p.value_dim();
  t.out_stride_batch = t.out_stride_token * per_request;
  t.lse = lse;
  t.lse_stride_token = p.q_heads;
  t.lse_stride_batch = static_cast<std::int64_t>(p.q_heads) * per_request;
  return t;
}

namespace {

void require_aligned(const void* ptr, std::size_t align, const char* argument) {
  require(reinterpret_cast<std::uintptr_t>(ptr) % align == 0, argument, [&] {
    return "must be aligned to " + std::to_string(align) + " bytes (its element size)";
  });
}

void require_non_negative(std::int64_t stride, const char* argument) {
  require(stride >= 0, argument,
          [&] { return "must be >= 0 elements (got " + std::to_string(stride) + ")"; });
}

struct Dim {
  std::int64_t n, s;  // extent and stride in elements
};

// Extents of the batch and token dimensions of q, out, lse and bias: [batch, q_len], or [1,
// total query tokens] with query_start_loc (query_index: the batch index is then 0).
struct QueryExtents {
  std::int64_t batch, tokens;
};
QueryExtents query_extents(const DecodeProblem& p) {
  if (p.has_query_start_loc()) return {p.total_queries() > 0 ? 1 : 0, p.total_queries()};
  return {p.batch(), p.q_len};
}

// Rows of `width` contiguous elements at sum_k i_k * dims[k].s for i_k < dims[k].n must not
// overlap (outputs are written concurrently). Dimensions of extent 1 do not count.
void require_disjoint_rows(std::int64_t width, std::array<Dim, 3> dims, const char* argument) {
  std::sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.s < b.s; });
  bool ok = true;
  std::int64_t span = width;  // extent covered by the dimensions handled so far
  for (const Dim& dim : dims) {
    if (dim.n <= 1) continue;
    ok = ok && dim.s >= span;
    span = dim.s * dim.n;
  }
  require(ok, argument, [&] {
    std::string text;
    for (const Dim& dim : dims) text += (text.empty() ? "" : ", ") + std::to_string(dim.s);
    return "strides (" + text + ") make output rows overlap; each row needs " +
           std::to_string(width) + " elements";
  });
}

// A per-query-head float array of a variant: present exactly when the variant uses it.
void require_head_array(const float* ptr, bool used, const char* argument, const char* flag) {
  require((ptr != nullptr) == used, argument, [&] {
    return used ? std::string("must not be null when the variant uses ") + flag
                : std::string("must be null unless the variant uses ") + flag;
  });
  require_aligned(ptr, alignof(float), argument);
}

// The variant bias: present exactly with variant.bias, aligned to its element, strides >= 0.
void require_bias(const DecodeProblem& p, const DecodeTensors& t) {
  // No query token at all (a mixed batch of zero counts): nothing reads a bias.
  const bool needed = p.variant.bias && p.total_queries() > 0;
  require(t.bias == nullptr ? !needed : p.variant.bias, "bias", [&] {
    return p.variant.bias ? "must not be null when the variant uses a bias"
                          : "must be null unless the variant uses a bias";
  });
  if (t.bias == nullptr) return;
  require_aligned(t.bias, dtype_size(p.bias_dtype), "bias");
  require_non_negative(t.bias_stride_batch, "bias_stride_batch");
  require_non_negative(t.bias_stride_token, "bias_stride_token");
  require_non_negative(t.bias_stride_head, "bias_stride_head");
}

// The bytes [begin, end) a strided tensor can touch: rows of `width` elements at offsets
// sum_i index_i * stride_i for index_i < extent_i. Empty when any extent is 0 or ptr is null.
struct ByteRange {
  std::uintptr_t begin = 0, end = 0;
};

ByteRange byte_range(const void* ptr, std::size_t elem, std::int64_t width,
                     std::initializer_list<std::pair<std::int64_t, std::int64_t>> dims) {
  std::int64_t last = width;  // elements up to the end of the last row
  for (const auto& [extent, stride] : dims) {
    if (extent <= 0) return {};
    last += (extent - 1) * stride;
  }
  if (ptr == nullptr || width <= 0) return {};
  const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
  return {begin, begin + static_cast<std::uintptr_t>(last) * elem};
}

// Outputs are written while the inputs are read (and by several threads): their address ranges
// must not overlap any input's, nor each other's.
void require_apart(const ByteRange& output, const ByteRange& other, const char* argument,
                   const char* other_name) {
  const bool overlap = output.begin < output.end && other.begin < other.end &&
                       output.begin < other.end && other.begin < output.end;
  require(!overlap, argument, [&] {
    return std::string("must not overlap ") + other_name + " (outputs are written in place)";
  });
}

void require_outputs_apart(const DecodeProblem& p, const DecodeTensors& t) {
  const std::size_t qs = dtype_size(p.q_dtype);
  const std::size_t ks = dtype_size(p.kv_dtype), vs = dtype_size(p.value_dtype());
  const bool paged = p.layout == KvLayout::paged;
  const std::int64_t outer = paged ? p.num_pages : p.batch();
  const std::int64_t rows = paged ? p.page_size : p.capacity;
  const QueryExtents e = query_extents(p);
  const ByteRange out = byte_range(t.out, qs, p.value_dim(),
                                   {{e.batch, t.out_stride_batch},
                                    {e.tokens, t.out_stride_token},
                                    {p.q_heads, t.out_stride_head}});
  const ByteRange lse =
      t.lse == nullptr
          ? ByteRange{}
          : byte_range(t.lse, sizeof(float), p.q_heads,
                       {{e.batch, t.lse_stride_batch}, {e.tokens, t.lse_stride_token}});
  const ByteRange q = byte_range(
      t.q, qs, p.head_dim,
      {{e.batch, t.q_stride_batch}, {e.tokens, t.q_stride_token}, {p.q_heads, t.q_stride_head}});
  const ByteRange k = byte_range(
      t.k_cache, ks, row_units(p.kv_dtype, p.head_dim),
      {{outer, t.k_strides.outer}, {rows, t.k_strides.token}, {p.kv_heads, t.k_strides.head}});
  const ByteRange v = byte_range(
      t.v_cache, vs, row_units(p.value_dtype(), p.value_dim()),
      {{outer, t.v_strides.outer}, {rows, t.v_strides.token}, {p.kv_heads, t.v_strides.head}});
  auto scales = [&](const float* ptr, const KvStrides& st) {
    return ptr == nullptr
               ? ByteRange{}
               : byte_range(ptr, sizeof(float), 1,
                            {{outer, st.outer}, {rows, st.token}, {p.kv_heads, st.head}});
  };
  const ByteRange k_scale = scales(t.k_scale, t.k_scale_strides);
  const ByteRange v_scale = scales(t.v_scale, t.v_scale_strides);
  for (const auto& [range, name] : {std::pair{out, "out"}, std::pair{lse, "lse"}}) {
    require_apart(range, q, name, "q");
    require_apart(range, k, name, "k_cache");
    require_apart(range, v, name, "v_cache");
    require_apart(range, k_scale, name, "k_scale");
    require_apart(range, v_scale, name, "v_scale");
  }
  require_apart(lse, out, "lse", "out");
}

std::string strides_text(const KvStrides& st) {
  return std::to_string(st.outer) + ", " + std::to_string(st.token) + ", " +
         std::to_string(st.head);
}

// The scales of a quantized cache: present exactly when kv_dtype is 8-bit (a cache nobody reads
// may go without), aligned, strides >= 0 and fitting the granularity (a per-tensor scale does not
// move, a per-head one moves with the head only).
void require_scale_layout(const DecodeProblem& p, const float* ptr, const KvStrides& st,
                          const char* argument, const char* strides_argument) {
  const bool quantized = is_quantized(p.kv_dtype);
  require(ptr == nullptr || quantized, argument, [&] {
    return "must be null for the unquantized kv_dtype " + std::string(dtype_name(p.kv_dtype));
  });
  if (!quantized) return;
  require(ptr != nullptr || p.total_tokens() == 0, argument, [&] {
    return "must not be null for the 8-bit kv_dtype " + std::string(dtype_name(p.kv_dtype));
  });
  require_aligned(ptr, alignof(float), argument);
  require(st.outer >= 0 && st.token >= 0 && st.head >= 0, strides_argument,
          [&] { return "must be >= 0 elements (got " + strides_text(st) + ")"; });
  const bool per_tensor = p.kv_scales == KvScales::per_tensor;
  const bool per_head = p.kv_scales == KvScales::per_kv_head;
  require(
      !(per_tensor || per_head) || (st.outer == 0 && st.token == 0 && (per_head || st.head == 0)),
      strides_argument, [&] {
        return std::string(per_tensor ? "must be 0, 0, 0 for per_tensor scales (one float)"
                                      : "must be 0, 0, head for per_kv_head scales "
                                        "([kv_heads] floats)") +
               " (got " + strides_text(st) + ")";
      });
}

// Host memory: every scale some request reads is finite and > 0 (a zero scale would make the
// whole block zero, a negative one flip it: neither comes out of a quantizer).
void require_scale_values(const DecodeProblem& p, const DecodeTensors& t, const float* ptr,
                          const KvStrides& st, const char* argument) {
  if (ptr == nullptr) return;
  const bool paged = p.layout == KvLayout::paged;
  auto check = [&](std::int64_t offset, auto where) {
    const float x = ptr[offset];
    require(std::isfinite(x) && x > 0.0f, argument,
            [&] { return "must be finite and > 0, but " + where() + " = " + std::to_string(x); });
  };
  if (p.kv_scales != KvScales::per_token_head) {
    const std::int32_t heads = p.kv_scales == KvScales::per_kv_head ? p.kv_heads : 1;
    for (std::int32_t h = 0; h < heads; ++h) {
      check(h * st.head, [&] {
        return std::string(argument) + (heads > 1 ? "[" + std::to_string(h) + "]" : "");
      });
    }
    return;
  }
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int64_t j = 0; j < p.seq_lens[b]; ++j) {
      const std::int64_t row =
          paged ? t.block_table[b * t.block_table_stride + j / p.page_size] * st.outer +
                      (j % p.page_size) * st.token
                : b * st.outer + j * st.token;
      for (std::int32_t h = 0; h < p.kv_heads; ++h) {
        check(row + h * st.head, [&] {
          return "the scale of request " + std::to_string(b) + ", token " + std::to_string(j) +
                 ", kv head " + std::to_string(h);
        });
      }
    }
  }
}

// Paged: a block table with every entry a request uses in [0, num_pages) (host memory).
void require_block_table(const DecodeProblem& p, const DecodeTensors& t, MemorySpace space) {
  require(t.block_table != nullptr, "block_table",
          [] { return "must not be null for the paged layout"; });
  require(t.block_table_stride >= p.max_pages, "block_table_stride", [&] {
    return "must be >= max_pages = " + std::to_string(p.max_pages) + " (got " +
           std::to_string(t.block_table_stride) + ")";
  });
  if (space == MemorySpace::device) return;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    const std::int64_t pages = pages_for(p.seq_lens[b], p.page_size);
    const std::int32_t* row = t.block_table + b * t.block_table_stride;
    for (std::int64_t i = 0; i < pages; ++i) {
      require(row[i] >= 0 && row[i] < p.num_pages, "block_table", [&] {
        return "entries a request uses must be in [0, num_pages = " + std::to_string(p.num_pages) +
               "), but block_table[" + std::to_string(b) + "][" + std::to_string(i) +
               "] = " + std::to_string(row[i]);
      });
    }
  }
}

}  // namespace

void validate(const DecodeProblem& p, const DecodeTensors& t, MemorySpace space) {
  const bool has_rows = p.total_queries() > 0;  // a mixed batch may have no query token
  require(t.q != nullptr || !has_rows, "q", [] { return "must not be null"; });
  const bool reads_kv = p.total_tokens() > 0;
  require(t.k_cache != nullptr || !reads_kv, "k_cache", [] { return "must not be null"; });
  require(t.v_cache != nullptr || !reads_kv, "v_cache", [] { return "must not be null"; });
  require(t.out != nullptr || !has_rows, "out", [] { return "must not be null"; });
  const std::size_t qs = dtype_size(p.q_dtype);
  require_aligned(t.q, qs, "q");
  require_aligned(t.out, qs, "out");
  require_aligned(t.k_cache, dtype_size(p.kv_dtype), "k_cache");
  require_aligned(t.v_cache, dtype_size(p.value_dtype()), "v_cache");
  require(!shares_kv(t) || p.value_dtype() == p.kv_dtype, "v_dtype", [&] {
    return "must be kv_dtype when V is read from K's rows (v_cache = k_cache with K's strides; got "
           "kv_dtype " +
           std::string(dtype_name(p.kv_dtype)) + ", v_dtype " +
           std::string(dtype_name(p.value_dtype())) + ")";
  });
  require_aligned(t.lse, alignof(float), "lse");
  require_non_negative(t.q_stride_batch, "q_stride_batch");
  require_non_negative(t.q_stride_head, "q_stride_head");
  require_non_negative(t.k_strides.outer, "k_strides.outer");
  require_non_negative(t.k_strides.token, "k_strides.token");
  require_non_negative(t.k_strides.head, "k_strides.head");
  require_non_negative(t.v_strides.outer, "v_strides.outer");
  require_non_negative(t.v_strides.token, "v_strides.token");
  require_non_negative(t.v_strides.head, "v_strides.head");
  require_non_negative(t.out_stride_batch, "out_stride_batch");
  require_non_negative(t.out_stride_head, "out_stride_head");
  require_non_negative(t.q_stride_token, "q_stride_token");
  require_non_negative(t.out_stride_token, "out_stride_token");
  const QueryExtents e = query_extents(p);
  require_disjoint_rows(p.value_dim(),
                        {Dim{e.batch, t.out_stride_batch}, Dim{e.tokens, t.out_stride_token},
                         Dim{p.q_heads, t.out_stride_head}},
                        "out");
  if (t.lse != nullptr) {
    require_non_negative(t.lse_stride_batch, "lse_stride_batch");
    require_non_negative(t.lse_stride_token, "lse_stride_token");
    require_disjoint_rows(
        p.q_heads, {Dim{e.batch, t.lse_stride_batch}, Dim{e.tokens, t.lse_stride_token}, Dim{1, 0}},
        "lse");
  }
  require_head_array(t.sinks, p.variant.sinks, "sinks", "sinks");
  require_head_array(t.alibi_slopes, p.variant.alibi, "alibi_slopes", "ALiBi");
  require_bias(p, t);
  require_scale_layout(p, t.k_scale, t.k_scale_strides, "k_scale", "k_scale_strides");
  require_scale_layout(p, t.v_scale, t.v_scale_strides, "v_scale", "v_scale_strides");
  require_outputs_apart(p, t);
  if (p.layout == KvLayout::paged) require_block_table(p, t, space);
  if (space == MemorySpace::device) return;
  require_scale_values(p, t, t.k_scale, t.k_scale_strides, "k_scale");
  require_scale_values(p, t, t.v_scale, t.v_scale_strides, "v_scale");
}

}  // namespace leanattn
