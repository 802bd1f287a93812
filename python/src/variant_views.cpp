// The variant and the quantization scales of a call (decode_views.hpp): sinks and ALiBi slopes
// per query head, an 8-bit cache's k_scale / v_scale, checked against the problem read before.
#include <string>

#include "decode_views.hpp"

namespace leanattn::python {

namespace {

// The data of a float32 array argument (sinks, alibi_slopes, k_scale, v_scale): on `device`
// (q's), float32 and C-contiguous, else an error naming `argument`. Null when empty.
const float* float32_data(const InArray& a, const Device& device, const char* argument) {
  require_device(a, device, argument);
  const auto dt = a.dtype();
  if (!is_scalar(dt, nb::dlpack::dtype_code::Float, 32)) {
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

}  // namespace

void attach_variant(DecodeViews& views, bool causal, std::int32_t window_left, float softcap,
                    const std::optional<InArray>& sinks,
                    const std::optional<InArray>& alibi_slopes) {
  DecodeProblem& p = views.problem;
  auto head_array = [&](const std::optional<InArray>& a, const char* argument) -> const float* {
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

void attach_kv_scales(DecodeViews& views, const std::optional<InArray>& k_scale,
                      const std::optional<InArray>& v_scale) {
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
  auto granularity = [&](const InArray& a, const char* argument) {
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
  const InArray& v_scales = views.shared_kv ? *k_scale : *v_scale;
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

}  // namespace leanattn::python
