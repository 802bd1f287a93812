// Views of Python arrays (NumPy, PyTorch, CuPy, anything with __dlpack__) as the library's
// DecodeProblem + DecodeTensors, without copies: shapes, element strides and data pointers are
// read from the DLPack descriptors. Every rule broken raises ValueError / TypeError naming the
// Python argument. Used by bind_decode.cpp and bind_reference.cpp.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "leanattn/dtype.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::python {

namespace nb = nanobind;

using InArray = nb::ndarray<nb::ro>;  // any framework, dtype, shape and device; read only
using OutArray = nb::ndarray<>;       // same, writable
// [batch] host int32 lengths (the Python layer converts lists and other integer types).
using SeqLensArray = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Where the arrays live (DLPack device), checked equal for all arguments of one call.
struct Device {
  int type = nb::device::cpu::value;
  int id = 0;
  bool operator==(const Device&) const = default;
};

// The element type of `a`. `hint` is what the Python layer knows about the array ("f32", "f16",
// "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "q8_0", "q4_0", or "" to read it from DLPack); "bf16"
// also accepts uint16, the view the Python layer makes of NumPy bfloat16 arrays (ml_dtypes), the
// fp8 hints uint8, the view it makes of float8 arrays (DLPack's float8 codes are not read), and
// the block formats' hints uint8, the bytes of ggml's blocks. Raises TypeError.
DType element_type(const nb::dlpack::dtype& dtype, std::string_view hint, const char* argument);

// A decode step's problem and tensors, read from the arrays.
struct DecodeViews {
  DecodeProblem problem;
  DecodeTensors tensors;
  Device device;
  bool token_dim = false;  // q (so out and lse) has the q_len dimension: 4-D q
  bool shared_kv = false;  // no v_cache: V is the leading head_dim_v values of K's rows
};

// q:           [batch, q_heads, head_dim], or [batch, q_len, q_heads, head_dim]
// k_cache:     [batch, capacity, kv_heads, head_dim], or with block_table
//              [num_pages, page_size, kv_heads, head_dim]
//              (ggml's block formats q8_0 / q4_0: uint8, the last dimension the row's bytes,
//              head_dim / 32 * 34 or 18, head_dim a multiple of 32; strides are then bytes)
// v_cache:     k_cache's shape but for its last dimension, V's rows of head_dim_v values (<=
//              head_dim) in K's type; or, with `v_hint` naming V's own type ("f16", "q8_0",
//              "q4_0"; "" = K's), a V of that type (problem.v_dtype is set where it differs from
//              K's: only f16, q8_0 and q4_0 mix, host arrays only, else ValueError naming
//              v_dtype). Null: V is the leading head_dim_v values of K's rows (absorbed MLA's
//              latent cache; v_strides = k_strides, views.shared_kv).
// head_dim_v:  V's width; 0 = v_cache's (for block formats from its row bytes), or head_dim
//              without v_cache. With v_cache it must match v_cache's (ValueError naming it).
// seq_lens:    [batch] int32 (host)
// block_table: [batch, max_pages] int32, or None for the contiguous layout
// scale:       softmax scale, 0 = 1/sqrt(head_dim)
// The head_dim dimension must be contiguous (stride 1); other strides are kept (>= 0).
// `views` is overwritten; its seq_lens vector keeps its capacity, so a reused DecodeViews
// allocates nothing. Array is InArray or DlView (dlpack_exchange.hpp).
template <class Array>
void decode_views(DecodeViews& views, const Array& q, std::string_view q_hint, const Array& k_cache,
                  const Array* v_cache, std::string_view kv_hint, std::string_view v_hint,
                  std::int32_t head_dim_v, std::span<const std::int32_t> seq_lens,
                  const Array* block_table, float scale);

// Points views.tensors at the outputs: out [batch, (q_len,) q_heads, head_dim_v] in q's dtype, lse
// [batch, (q_len,) q_heads] float32 with contiguous heads (or null), on q's device (q_len when q
// has it). Both written by the
// executor. Array is OutArray or DlView.
template <class Array>
void attach_outputs(DecodeViews& views, const Array& out, std::string_view out_hint,
                    const Array* lse);

// sinks, alibi_slopes [q_heads]: float32, contiguous, on q's device (host arrays with host q,
// device arrays with device q: the Python layer converts in q's framework). Taken as any DLPack
// array and checked by attach_variant, so that a wrong one is named.
using HeadArray = InArray;

// The attention variant of the call (docs/numerics.md, "Variants"): window_left -1 = none,
// softcap 0 = off, sinks and alibi_slopes [q_heads] or None. Checks them (float32: TypeError;
// their length, contiguity and device: ValueError, naming the argument). Call after
// decode_views.
void attach_variant(DecodeViews& views, bool causal, std::int32_t window_left, float softcap,
                    const std::optional<HeadArray>& sinks,
                    const std::optional<HeadArray>& alibi_slopes);

// Scales of a quantized cache: float32, C-contiguous, on q's device (the Python layer converts in
// q's framework), any number of dimensions; checked by attach_kv_scales.
using ScaleArray = InArray;

// The scales of an 8-bit cache (docs/numerics.md, "Quantized KV caches"): k_scale and v_scale of
// the same shape, [] or [1] (per tensor), [kv_heads] (per KV head), or the cache's shape without
// head_dim (per token and KV head; paged caches through the block table). Required for an 8-bit
// cache, refused otherwise (ValueError naming the argument), float32 (TypeError), C-contiguous
// and on q's device (ValueError). Their values are read by the executor only (docs/validation.md:
// checked on the host, the caller's on a device). V in K's rows (views.shared_kv) takes k_scale:
// v_scale must be None then. Call after decode_views.
void attach_kv_scales(DecodeViews& views, const std::optional<ScaleArray>& k_scale,
                      const std::optional<ScaleArray>& v_scale);

// Human-readable name of a DLPack dtype ("float64", "int32", "bfloat16", ...).
std::string dtype_text(const nb::dlpack::dtype& dtype);

}  // namespace leanattn::python
