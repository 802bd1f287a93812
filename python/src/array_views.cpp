// Reading DLPack descriptors into DecodeProblem + DecodeTensors (see array_views.hpp).
#include "array_views.hpp"

#include <array>
#include <limits>
#include <optional>
#include <string>

#include "dlpack_exchange.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace {

using nb::dlpack::dtype_code;

template <class Array>
std::string shape_text(const Array& a) {
  std::string s = "[";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}

std::string device_text(const Device& d) {
  const std::string name = d.type == nb::device::cpu::value ? "cpu"
                           : d.type == nb::device::cuda::value
                               ? "cuda"
                               : "device type " + std::to_string(d.type);
  return name + ":" + std::to_string(d.id);
}

template <class Array>
Device device_of(const Array& a) {
  return {a.device_type(), a.device_id()};
}

template <class Array>
void require_device(const Array& a, const Device& want, const char* argument) {
  const Device got = device_of(a);
  if (!(got == want)) {
    value_error(argument, "must be on q's device (" + device_text(want) + "), but it is on " +
                              device_text(got));
  }
}

template <class Array>
void require_ndim(const Array& a, std::size_t ndim, const char* argument, const char* layout) {
  if (a.ndim() != ndim) {
    value_error(argument, "must be " + std::string(layout) + " (" + std::to_string(ndim) +
                              " dimensions), got " + std::to_string(a.ndim()) + " dimensions");
  }
}

// Element strides of `a`, checked: >= 0, and 1 in the last dimension (head_dim rows are read as
// contiguous vectors). Dimensions of extent 1 (and empty arrays) are never stepped over: their
// strides are set to 0, since frameworks report arbitrary strides there.
template <class Array>
std::array<std::int64_t, 4> strides_of(const Array& a, const char* argument) {
  std::array<std::int64_t, 4> s{};
  if (a.size() == 0) return s;  // nothing is read: frameworks report any strides here
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    s[i] = a.shape(i) <= 1 ? 0 : a.stride(i);
    if (s[i] < 0) {
      value_error(argument, "strides must be >= 0, but dimension " + std::to_string(i) +
                                " has stride " + std::to_string(s[i]) +
                                " (pass a copy, e.g. numpy.ascontiguousarray)");
    }
  }
  const std::size_t last = a.ndim() - 1;
  if (a.shape(last) > 1 && s[last] != 1) {
    value_error(argument, "its last dimension must be contiguous (stride 1), got stride " +
                              std::to_string(s[last]) + " (pass a copy, e.g. .contiguous())");
  }
  return s;
}

std::int32_t to_i32(std::size_t value, const char* argument, const std::string& what) {
  if (value > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    value_error(argument, what + " = " + std::to_string(value) + " is too large");
  }
  return static_cast<std::int32_t>(value);
}

template <class Array>
const void* data_of(const Array& a) {
  return a.size() == 0 ? nullptr : a.data();
}

// The data of a float32 array argument of the call (sinks, alibi_slopes, k_scale, v_scale): on
// `device` (q's), float32 and C-contiguous, else an error naming `argument`. Null when empty.
template <class Array>
const float* float32_data(const Array& a, const Device& device, const char* argument) {
  require_device(a, device, argument);
  const auto dt = a.dtype();
  if (dt.code != static_cast<std::uint8_t>(dtype_code::Float) || dt.bits != 32 || dt.lanes != 1) {
    type_error(argument, "dtype must be float32 (got " + dtype_text(dt) + ")");
  }
  std::int64_t dense = 1;  // the stride of a C-contiguous array, innermost dimension first
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) > 1 && a.stride(i) != dense) {
      value_error(argument, "must be contiguous (C order), but dimension " + std::to_string(i) +
                                " has stride " + std::to_string(a.stride(i)) +
                                " (pass a copy, e.g. .contiguous())");
    }
    dense *= static_cast<std::int64_t>(a.shape(i));
  }
  return static_cast<const float*>(data_of(a));
}

// The rows of one cache (k_cache or v_cache, `argument`) of type `type`: the last dimension
// `width` values (q's head_dim for K, head_dim_v for V; `width_name` says which, `width_argument`
// is the parameter it comes from); for ggml's block formats (q8_0, q4_0) the row's bytes, width /
// 32 blocks, width a multiple of the block's 32 values (ValueError naming width_argument or the
// cache otherwise; `type_argument`, kv_dtype or v_dtype, is the parameter that named the format).
// Strides of such a uint8 cache are bytes, the unit the library counts them in for these types.
template <class Array>
void check_rows(DType type, const char* type_argument, std::size_t width, const Array& cache,
                const std::string& argument, const std::string& width_argument = "q",
                const std::string& width_name = "head_dim (q.shape[-1])") {
  if (!is_block_format(type)) {
    if (cache.shape(3) == width) return;
    value_error(argument, "head_dim (" + argument +
                              ".shape[3]) = " + std::to_string(cache.shape(3)) +
                              " must equal q's " + width_name + " = " + std::to_string(width));
  }
  const std::string name(dtype_name(type));
  if (width % kBlockValues != 0) {
    value_error(width_argument, width_name + " = " + std::to_string(width) +
                                    " must be a multiple of " + std::to_string(kBlockValues) +
                                    " for " + type_argument + "='" + name + "' (ggml's blocks of " +
                                    std::to_string(kBlockValues) + " values)");
  }
  const auto bytes = static_cast<std::size_t>(row_units(type, static_cast<std::int64_t>(width)));
  if (cache.shape(3) == bytes) return;
  value_error(argument,
              "its last dimension (" + argument + ".shape[3]) = " + std::to_string(cache.shape(3)) +
                  " must be the bytes of a " + name + " row of " + width_name + " = " +
                  std::to_string(width) + " values: " + width_name.substr(0, width_name.find(' ')) +
                  " / " + std::to_string(kBlockValues) + " * " + std::to_string(block_bytes(type)) +
                  " = " + std::to_string(bytes));
}

// V's width (head_dim_v) from v_cache's rows of type `type`: its last dimension, or for ggml's
// block formats the values of its row bytes (K's head_dim when they are a K row's bytes).
// `head_dim_v` the caller passed (0: none) must match it; V may not be wider than K (head_dim).
template <class Array>
std::int32_t value_width(DType type, const char* type_argument, std::size_t head_dim,
                         std::int32_t head_dim_v, const Array& v_cache) {
  const std::size_t last = v_cache.shape(3);
  std::size_t width = last;
  if (head_dim_v != 0 && is_block_format(type)) {
    check_rows(type, type_argument, static_cast<std::size_t>(head_dim_v), v_cache, "v_cache",
               "head_dim_v", "head_dim_v");
    width = static_cast<std::size_t>(head_dim_v);
  } else if (is_block_format(type)) {
    const auto block = static_cast<std::size_t>(block_bytes(type));
    if (last == static_cast<std::size_t>(row_units(type, static_cast<std::int64_t>(head_dim)))) {
      width = head_dim;
    } else if (last == 0 || last % block != 0) {
      check_rows(type, type_argument, head_dim, v_cache, "v_cache");  // says what K's row is
    } else {
      width = last / block * kBlockValues;
    }
  }
  if (head_dim_v != 0 && static_cast<std::size_t>(head_dim_v) != width) {
    value_error("head_dim_v",
                "must equal V's width, v_cache's last dimension "
                "(v_cache.shape[3]) = " +
                    std::to_string(width) + ", or be None to take it from v_cache (got " +
                    std::to_string(head_dim_v) + ")");
  }
  if (width == 0) {
    value_error("v_cache", "head_dim_v (v_cache.shape[3]) must be at least 16 (got 0)");
  }
  if (width > head_dim) {
    value_error("v_cache", "head_dim_v (v_cache.shape[3]) = " + std::to_string(width) +
                               " must be at most q's head_dim (q.shape[-1]) = " +
                               std::to_string(head_dim) + " (V no wider than K)");
  }
  return to_i32(width, "v_cache", "head_dim_v (v_cache.shape[3])");
}

// V's type where it differs from K's (v_dtype=): only f16, q8_0 and q4_0 mix, the pairs
// llama.cpp's -ctk / -ctv make (validate(DecodeProblem)'s rule, checked here first so that it is
// named before the scale arguments are), and only the CPU engine and the reference read them.
void check_value_type(DType k, DType v, const Device& device) {
  auto mixable = [](DType t) { return t == DType::f16 || is_block_format(t); };
  if (!mixable(k) || !mixable(v)) {
    value_error("v_dtype",
                "V's type may differ from K's only when both are f16, q8_0 or q4_0 (the pairs of "
                "llama.cpp's -ctk / -ctv); got K " +
                    std::string(dtype_name(k)) + ", V " + std::string(dtype_name(v)));
  }
  if (device.type != nb::device::cpu::value) {
    value_error("v_dtype", "K and V of different types (K " + std::string(dtype_name(k)) + ", V " +
                               std::string(dtype_name(v)) +
                               ") are read by the CPU engine and the reference only: pass host "
                               "arrays, or K and V of one type");
  }
}

}  // namespace

std::string dtype_text(const nb::dlpack::dtype& dtype) {
  std::string base;
  switch (static_cast<dtype_code>(dtype.code)) {
    case dtype_code::Int:
      base = "int";
      break;
    case dtype_code::UInt:
      base = "uint";
      break;
    case dtype_code::Float:
      base = "float";
      break;
    case dtype_code::Bfloat:
      base = "bfloat";
      break;
    case dtype_code::Complex:
      base = "complex";
      break;
    case dtype_code::Bool:
      return "bool";
    default:
      base = "dlpack type code " + std::to_string(dtype.code) + " of ";
      break;
  }
  std::string text = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) text += "x" + std::to_string(dtype.lanes);
  return text;
}

DType element_type(const nb::dlpack::dtype& dtype, std::string_view hint, const char* argument) {
  const auto code = static_cast<dtype_code>(dtype.code);
  const bool scalar = dtype.lanes == 1;
  std::optional<DType> found;
  if (scalar && code == dtype_code::Float && dtype.bits == 32) found = DType::f32;
  if (scalar && code == dtype_code::Float && dtype.bits == 16) found = DType::f16;
  if (scalar && code == dtype_code::Bfloat && dtype.bits == 16) found = DType::bf16;
  if (scalar && code == dtype_code::UInt && dtype.bits == 16 && hint == "bf16") found = DType::bf16;
  // 8-bit caches: int8 as such; fp8 as the uint8 view the Python layer makes, with its hint.
  if (scalar && code == dtype_code::Int && dtype.bits == 8) found = DType::int8;
  if (scalar && code == dtype_code::UInt && dtype.bits == 8 &&
      (hint == "fp8_e4m3" || hint == "fp8_e5m2")) {
    found = hint == "fp8_e4m3" ? DType::fp8_e4m3 : DType::fp8_e5m2;
  }
  // ggml's block formats: the cache's bytes (uint8), with the hint "q8_0" or "q4_0".
  if (scalar && code == dtype_code::UInt && dtype.bits == 8 && (hint == "q8_0" || hint == "q4_0")) {
    found = hint == "q8_0" ? DType::q8_0 : DType::q4_0;
  }
  if (!found || (!hint.empty() && dtype_name(*found) != hint)) {
    type_error(argument,
               "dtype must be float32, float16 or bfloat16, or for a KV cache int8, "
               "float8_e4m3fn or float8_e5m2 (uint8 with kv_dtype=), or uint8 ggml blocks "
               "(kv_dtype='q8_0' or 'q4_0') (got " +
                   dtype_text(dtype) + ")");
  }
  return *found;
}

template <class Array>
void decode_views(DecodeViews& views, const Array& q, std::string_view q_hint, const Array& k_cache,
                  const Array* v_cache, std::string_view kv_hint, std::string_view v_hint,
                  std::int32_t head_dim_v, std::span<const std::int32_t> seq_lens,
                  const Array* block_table, float scale) {
  const bool paged = block_table != nullptr;
  const char* kv_layout = paged ? "[num_pages, page_size, kv_heads, head_dim]"
                                : "[batch, capacity, kv_heads, head_dim]";
  if (q.ndim() != 4)
    require_ndim(q, 3, "q", "[batch, q_heads, head_dim] or [batch, q_len, q_heads, head_dim]");
  require_ndim(k_cache, 4, "k_cache", kv_layout);
  if (v_cache != nullptr) {
    require_ndim(*v_cache, 4, "v_cache",
                 paged ? "[num_pages, page_size, kv_heads, head_dim_v]"
                       : "[batch, capacity, kv_heads, head_dim_v]");
  }

  {  // start afresh, keeping the capacity of seq_lens
    std::vector<std::int32_t> lens = std::move(views.problem.seq_lens);
    views.problem = DecodeProblem{};
    views.problem.seq_lens = std::move(lens);
    views.tensors = DecodeTensors{};
  }
  // 4-D q: [batch, q_len, q_heads, head_dim] (flash-attn's layout); 3-D means q_len = 1.
  views.token_dim = q.ndim() == 4;
  views.shared_kv = v_cache == nullptr;
  const std::size_t o = views.token_dim ? 1 : 0;
  views.device = device_of(q);
  require_device(k_cache, views.device, "k_cache");
  if (v_cache != nullptr) require_device(*v_cache, views.device, "v_cache");

  DecodeProblem& p = views.problem;
  p.q_dtype = element_type(q.dtype(), q_hint, "q");
  if (is_kv_only(p.q_dtype)) {
    type_error("q",
               "dtype must be float32, float16 or bfloat16 (8-bit types are for the KV "
               "cache only; got " +
                   dtype_text(q.dtype()) + ")");
  }
  p.kv_dtype = element_type(k_cache.dtype(), kv_hint, "k_cache");
  // V's type: K's unless the caller named its own (v_hint, from v_dtype=); K's in K's rows.
  DType v_type = p.kv_dtype;
  if (v_cache == nullptr && !v_hint.empty()) {
    value_error("v_dtype", "V read from K's rows (v_cache None) has K's type: pass v_dtype=None");
  }
  if (v_cache != nullptr) {
    v_type = element_type(v_cache->dtype(), v_hint.empty() ? kv_hint : v_hint, "v_cache");
  }
  if (v_type != p.kv_dtype) {
    if (v_hint.empty()) {
      type_error("v_cache", "dtype must match k_cache's (" + dtype_text(k_cache.dtype()) +
                                "), got " + dtype_text(v_cache->dtype()));
    }
    check_value_type(p.kv_dtype, v_type, views.device);
    p.v_dtype = v_type;
  }

  const std::size_t batch = q.shape(0);
  if (seq_lens.size() != batch) {
    value_error("seq_lens", "must hold one length per request: q has batch = " +
                                std::to_string(batch) + " (q.shape[0]) but seq_lens has " +
                                std::to_string(seq_lens.size()) + " entries");
  }
  p.seq_lens.assign(seq_lens.begin(), seq_lens.end());
  p.q_len = o == 1 ? to_i32(q.shape(1), "q", "q_len (q.shape[1])") : 1;
  p.q_heads = to_i32(q.shape(1 + o), "q", "q_heads (q.shape[-2])");
  p.head_dim = to_i32(q.shape(2 + o), "q", "head_dim (q.shape[-1])");
  p.kv_heads = to_i32(k_cache.shape(2), "k_cache", "kv_heads (k_cache.shape[2])");
  check_rows(p.kv_dtype, "kv_dtype", q.shape(2 + o), k_cache, "k_cache");
  if (head_dim_v < 0) {
    value_error("head_dim_v", "must be >= 1, or None (got " + std::to_string(head_dim_v) + ")");
  }
  std::int32_t value_dim = 0;
  if (v_cache != nullptr) {
    // K's shape but for the last dimension: V's own rows (head_dim_v values, its own type).
    for (std::size_t i = 0; i < 3u; ++i) {
      if (v_cache->shape(i) != k_cache.shape(i)) {
        value_error("v_cache", "must have k_cache's shape " + shape_text(k_cache) +
                                   " but for its own rows in the last dimension, got " +
                                   shape_text(*v_cache));
      }
    }
    value_dim = value_width(v_type, p.v_dtype ? "v_dtype" : "kv_dtype", q.shape(2 + o), head_dim_v,
                            *v_cache);
  } else {
    value_dim = head_dim_v != 0 ? head_dim_v : p.head_dim;
    if (value_dim > p.head_dim) {
      value_error("head_dim_v",
                  "must be at most head_dim (q.shape[-1]) = " + std::to_string(p.head_dim) +
                      ": without v_cache, V is the first head_dim_v values of K's "
                      "rows (got " +
                      std::to_string(value_dim) + ")");
    }
  }
  p.head_dim_v = value_dim == p.head_dim ? 0 : value_dim;
  if (p.kv_heads < 1) value_error("k_cache", "kv_heads (k_cache.shape[2]) must be >= 1 (got 0)");
  if (p.q_heads % p.kv_heads != 0) {
    value_error("q", "q_heads (q.shape[-2]) = " + std::to_string(p.q_heads) +
                         " must be a multiple of kv_heads (k_cache.shape[2]) = " +
                         std::to_string(p.kv_heads));
  }
  p.scale = scale;

  DecodeTensors& t = views.tensors;
  const auto qs = strides_of(q, "q");
  const auto ks = strides_of(k_cache, "k_cache");
  t.q = data_of(q);
  t.q_stride_batch = qs[0];
  t.q_stride_token = o == 1 ? qs[1] : 0;
  t.q_stride_head = qs[1 + o];
  t.k_cache = data_of(k_cache);
  t.k_strides = {ks[0], ks[1], ks[2]};
  if (v_cache == nullptr) {  // V in K's rows: the same pointer and strides (shares_kv)
    t.v_cache = t.k_cache;
    t.v_strides = t.k_strides;
  } else {
    const auto vs = strides_of(*v_cache, "v_cache");
    t.v_cache = data_of(*v_cache);
    t.v_strides = {vs[0], vs[1], vs[2]};
  }

  if (!paged) {
    p.layout = KvLayout::contiguous;
    if (k_cache.shape(0) != batch) {
      value_error("k_cache",
                  "must hold one row per request (contiguous layout): k_cache.shape[0] = " +
                      std::to_string(k_cache.shape(0)) + " but q has batch = " +
                      std::to_string(batch) + " (pass block_table for a paged cache)");
    }
    p.capacity = static_cast<std::int64_t>(k_cache.shape(1));
    return;
  }

  const Array& bt = *block_table;
  require_ndim(bt, 2, "block_table", "[batch, max_pages]");
  require_device(bt, views.device, "block_table");
  const auto bt_type = bt.dtype();
  if (bt_type.code != static_cast<std::uint8_t>(dtype_code::Int) || bt_type.bits != 32 ||
      bt_type.lanes != 1) {
    type_error("block_table", "dtype must be int32 (got " + dtype_text(bt_type) + ")");
  }
  if (bt.shape(0) != batch) {
    value_error("block_table", "must hold one row per request: block_table.shape[0] = " +
                                   std::to_string(bt.shape(0)) +
                                   " but q has batch = " + std::to_string(batch));
  }
  const auto bs = strides_of(bt, "block_table");
  p.layout = KvLayout::paged;
  p.num_pages = static_cast<std::int64_t>(k_cache.shape(0));
  p.page_size = to_i32(k_cache.shape(1), "k_cache", "page_size (k_cache.shape[1])");
  p.max_pages = to_i32(bt.shape(1), "block_table", "max_pages (block_table.shape[1])");
  t.block_table = static_cast<const std::int32_t*>(data_of(bt));
  // A single row is never stepped over; give it the stride the validator expects.
  t.block_table_stride = bt.shape(0) <= 1 ? static_cast<std::int64_t>(bt.shape(1)) : bs[0];
}

void attach_variant(DecodeViews& views, bool causal, std::int32_t window_left, float softcap,
                    const std::optional<HeadArray>& sinks,
                    const std::optional<HeadArray>& alibi_slopes) {
  DecodeProblem& p = views.problem;
  auto head_array = [&](const std::optional<HeadArray>& a, const char* argument) -> const float* {
    if (!a) return nullptr;
    if (a->ndim() != 1 || a->shape(0) != static_cast<std::size_t>(p.q_heads)) {
      value_error(argument, "must hold one value per query head: shape [" +
                                std::to_string(p.q_heads) + "], got " + shape_text(*a));
    }
    return float32_data(*a, views.device, argument);
  };
  p.variant = {.causal = causal,
               .window_left = window_left,
               .softcap = softcap,
               .sinks = sinks.has_value(),
               .alibi = alibi_slopes.has_value()};
  views.tensors.sinks = head_array(sinks, "sinks");
  views.tensors.alibi_slopes = head_array(alibi_slopes, "alibi_slopes");
}

void attach_kv_scales(DecodeViews& views, const std::optional<ScaleArray>& k_scale,
                      const std::optional<ScaleArray>& v_scale) {
  DecodeProblem& p = views.problem;
  DecodeTensors& t = views.tensors;
  const bool paged = p.layout == KvLayout::paged;
  const std::size_t outer = paged ? static_cast<std::size_t>(p.num_pages) : p.seq_lens.size();
  const std::size_t rows =
      paged ? static_cast<std::size_t>(p.page_size) : static_cast<std::size_t>(p.capacity);
  const auto heads = static_cast<std::size_t>(p.kv_heads);
  const std::string cache_rows =
      paged ? "[num_pages, page_size, kv_heads]" : "[batch, capacity, kv_heads]";
  // The granularity a scale array's shape gives: [] or [1] per tensor, [kv_heads] per KV head,
  // the cache's shape without head_dim per (token, KV head).
  auto granularity = [&](const ScaleArray& a, const char* argument) {
    if (a.ndim() == 0 || (a.ndim() == 1 && a.shape(0) == 1)) return KvScales::per_tensor;
    if (a.ndim() == 1 && a.shape(0) == heads) return KvScales::per_kv_head;
    if (a.ndim() == 3 && a.shape(0) == outer && a.shape(1) == rows && a.shape(2) == heads)
      return KvScales::per_token_head;
    value_error(argument, "must be a scalar (per tensor), [kv_heads] = [" + std::to_string(heads) +
                              "] (per KV head) or " + cache_rows + " = [" + std::to_string(outer) +
                              ", " + std::to_string(rows) + ", " + std::to_string(heads) +
                              "] (per token and KV head), got " + shape_text(a));
  };
  if (is_block_format(p.kv_dtype) && (k_scale || v_scale)) {
    value_error(k_scale ? "k_scale" : "v_scale",
                "is not taken with a " + std::string(dtype_name(p.kv_dtype)) +
                    " cache (ggml's blocks hold their own scales): pass None");
  }
  if (!is_quantized(p.kv_dtype)) {
    if (k_scale || v_scale) {
      value_error(k_scale ? "k_scale" : "v_scale", "is only for 8-bit caches (k_cache is " +
                                                       std::string(dtype_name(p.kv_dtype)) + ")");
    }
    return;
  }
  if (views.shared_kv && v_scale) {
    value_error("v_scale", "V is read from K's rows (v_cache None), with k_scale: pass None");
  }
  if (!k_scale || (!v_scale && !views.shared_kv)) {
    value_error(!k_scale ? "k_scale" : "v_scale", "is required for an 8-bit cache (k_cache is " +
                                                      std::string(dtype_name(p.kv_dtype)) + ")");
  }
  const ScaleArray& v_scales = views.shared_kv ? *k_scale : *v_scale;
  p.kv_scales = granularity(*k_scale, "k_scale");
  if (granularity(v_scales, "v_scale") != p.kv_scales) {
    value_error("v_scale", "must have k_scale's shape " + shape_text(*k_scale) + ", got " +
                               shape_text(v_scales));
  }
  KvStrides st;  // dense, as dense_tensors lays them out
  if (p.kv_scales == KvScales::per_kv_head) st = {0, 0, 1};
  if (p.kv_scales == KvScales::per_token_head)
    st = {static_cast<std::int64_t>(rows * heads), static_cast<std::int64_t>(heads), 1};
  t.k_scale = float32_data(*k_scale, views.device, "k_scale");
  t.v_scale = views.shared_kv ? t.k_scale : float32_data(*v_scale, views.device, "v_scale");
  t.k_scale_strides = st;
  t.v_scale_strides = st;
}

template <class Array>
void attach_outputs(DecodeViews& views, const Array& out, std::string_view out_hint,
                    const Array* lse) {
  const DecodeProblem& p = views.problem;
  const std::size_t o = views.token_dim ? 1 : 0;  // q is [batch, q_len, q_heads, head_dim]
  const char* out_layout =
      o ? "[batch, q_len, q_heads, head_dim_v]" : "[batch, q_heads, head_dim_v]";
  require_ndim(out, 3 + o, "out", out_layout);
  require_device(out, views.device, "out");
  if (element_type(out.dtype(), out_hint, "out") != p.q_dtype) {
    type_error("out", "dtype must be q's (" + std::string(dtype_name(p.q_dtype)) + ")");
  }
  if (out.shape(0) != p.seq_lens.size() ||
      (o && out.shape(1) != static_cast<std::size_t>(p.q_len)) ||
      out.shape(1 + o) != static_cast<std::size_t>(p.q_heads) ||
      out.shape(2 + o) != static_cast<std::size_t>(p.value_dim())) {
    std::string want = "[" + std::to_string(p.seq_lens.size());
    if (o) want += ", " + std::to_string(p.q_len);
    want += ", " + std::to_string(p.q_heads) + ", " + std::to_string(p.value_dim()) + "]";
    value_error("out", "must have shape " + std::string(out_layout) + " = " + want +
                           " (q's, its last dimension V's width), got " + shape_text(out));
  }
  const auto os = strides_of(out, "out");
  views.tensors.out = out.size() == 0 ? nullptr : out.data();
  views.tensors.out_stride_batch = os[0];
  views.tensors.out_stride_token = o ? os[1] : 0;
  views.tensors.out_stride_head = os[1 + o];
  if (lse == nullptr) return;
  require_ndim(*lse, 2 + o, "lse_out", o ? "[batch, q_len, q_heads]" : "[batch, q_heads]");
  require_device(*lse, views.device, "lse_out");
  const auto lt = lse->dtype();
  if (lt.code != static_cast<std::uint8_t>(dtype_code::Float) || lt.bits != 32 || lt.lanes != 1) {
    type_error("lse_out", "dtype must be float32 (got " + dtype_text(lt) + ")");
  }
  if (lse->shape(0) != p.seq_lens.size() ||
      (o && lse->shape(1) != static_cast<std::size_t>(p.q_len)) ||
      lse->shape(1 + o) != static_cast<std::size_t>(p.q_heads)) {
    value_error("lse_out",
                o ? "must have shape [batch, q_len, q_heads]" : "must have shape [batch, q_heads]");
  }
  const auto ls = strides_of(*lse, "lse_out");
  views.tensors.lse = lse->size() == 0 ? nullptr : static_cast<float*>(lse->data());
  views.tensors.lse_stride_batch = ls[0];
  views.tensors.lse_stride_token = o ? ls[1] : 0;
}

template void decode_views<InArray>(DecodeViews&, const InArray&, std::string_view, const InArray&,
                                    const InArray*, std::string_view, std::string_view,
                                    std::int32_t, std::span<const std::int32_t>, const InArray*,
                                    float);
template void decode_views<DlView>(DecodeViews&, const DlView&, std::string_view, const DlView&,
                                   const DlView*, std::string_view, std::string_view, std::int32_t,
                                   std::span<const std::int32_t>, const DlView*, float);
template void attach_outputs<OutArray>(DecodeViews&, const OutArray&, std::string_view,
                                       const OutArray*);
template void attach_outputs<DlView>(DecodeViews&, const DlView&, std::string_view, const DlView*);

}  // namespace leanattn::python
