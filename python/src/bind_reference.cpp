// _leanattn._reference: the library's fp64 reference (reference::naive_attention) on the
// caller's host arrays, returned as new float64 NumPy arrays. Public wrapper: leanattn.reference.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string_view.h>

#include "array_views.hpp"
#include "bindings.hpp"
#include "errors.hpp"
#include "leanattn/reference.hpp"
#include "numpy_result.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;
using F64Array = nb::ndarray<nb::numpy, double>;

// Same arguments as _decode (host arrays only). Returns out [batch, (q_len,) q_heads, head_dim_v]
// and lse [batch, (q_len,) q_heads] (natural log, -inf for an empty sequence), both float64.
std::pair<F64Array, F64Array> reference(
    const InArray& q, std::string_view q_dtype, const InArray& k_cache,
    const std::optional<InArray>& v_cache, std::string_view kv_dtype, const SeqLensArray& seq_lens,
    const std::optional<InArray>& block_table, float scale, bool causal, std::int32_t window_left,
    float softcap, const std::optional<HeadArray>& sinks,
    const std::optional<HeadArray>& alibi_slopes, const std::optional<ScaleArray>& k_scale,
    const std::optional<ScaleArray>& v_scale, std::string_view v_dtype, std::int32_t head_dim_v) {
  DecodeViews views;
  decode_views(views, q, q_dtype, k_cache, v_cache ? &*v_cache : nullptr, kv_dtype, v_dtype,
               head_dim_v, std::span<const std::int32_t>(seq_lens.data(), seq_lens.shape(0)),
               block_table ? &*block_table : nullptr, scale);
  attach_variant(views, causal, window_left, softcap, sinks, alibi_slopes);
  attach_kv_scales(views, k_scale, v_scale);
  if (views.device.type != nb::device::cpu::value) {
    value_error("q", "reference() reads host memory: pass CPU arrays");
  }
  // The reference reads the inputs only, but validates the whole DecodeTensors: give it a
  // placeholder output with dense strides (checked, never written).
  const DecodeProblem& p = views.problem;
  DecodeTensors t = views.tensors;
  double placeholder = 0.0;
  t.out = &placeholder;
  t.out_stride_head = p.value_dim();
  t.out_stride_token = static_cast<std::int64_t>(p.q_heads) * p.value_dim();
  t.out_stride_batch = t.out_stride_token * p.q_len;
  reference::Output r = translate_errors(Entry::decode, [&] {
    nb::gil_scoped_release no_gil;
    return reference::naive_attention(p, t);
  });
  const auto batch = static_cast<std::size_t>(p.batch());
  const auto heads = static_cast<std::size_t>(p.q_heads);
  const auto dim = static_cast<std::size_t>(p.value_dim());
  if (views.token_dim) {
    const auto q_len = static_cast<std::size_t>(p.q_len);
    return {numpy_result(std::move(r.out), {batch, q_len, heads, dim}),
            numpy_result(std::move(r.lse), {batch, q_len, heads})};
  }
  return {numpy_result(std::move(r.out), {batch, heads, dim}),
          numpy_result(std::move(r.lse), {batch, heads})};
}

}  // namespace

void bind_reference(nb::module_& m) {
  m.def("_reference", &reference, "q"_a.noconvert(), "q_dtype"_a, "k_cache"_a.noconvert(),
        "v_cache"_a.noconvert().none(), "kv_dtype"_a, "seq_lens"_a.noconvert(),
        "block_table"_a.noconvert().none(), "scale"_a, "causal"_a = true, "window_left"_a = -1,
        "softcap"_a = 0.0f, "sinks"_a.noconvert().none() = nb::none(),
        "alibi_slopes"_a.noconvert().none() = nb::none(),
        "k_scale"_a.noconvert().none() = nb::none(), "v_scale"_a.noconvert().none() = nb::none(),
        "v_dtype"_a = "", "head_dim_v"_a = 0, "Private: use leanattn.reference.");
}

}  // namespace leanattn::python
