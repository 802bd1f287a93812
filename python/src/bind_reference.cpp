// _leanattn._reference: the library's fp64 reference (reference::naive_attention) on the
// caller's host arrays, returned as new float64 NumPy arrays. Public wrapper: leanattn.reference.
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>

#include "bindings.hpp"
#include "decode_views.hpp"
#include "errors.hpp"
#include "leanattn/reference.hpp"
#include "numpy_result.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;
using F64Array = nb::ndarray<nb::numpy, double>;

// problem: a _leanattn.Problem of host arrays with its seq_lens. Returns out [batch, (q_len,)
// q_heads, V's width] and lse [batch, (q_len,) q_heads] (natural log, -inf for an empty
// sequence), both float64.
std::pair<F64Array, F64Array> reference(nb::handle problem) {
  DecodeViews views;
  read_problem(views, problem);
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
  t.out_stride_batch = p.has_query_start_loc() ? 0 : t.out_stride_token * p.q_len;
  reference::Output r = translate_errors(Entry::decode, [&] {
    nb::gil_scoped_release no_gil;
    return reference::naive_attention(p, t);
  });
  const auto batch = static_cast<std::size_t>(p.batch());
  const auto heads = static_cast<std::size_t>(p.q_heads);
  const auto dim = static_cast<std::size_t>(p.value_dim());
  if (views.packed) {  // [total query tokens, ...]
    const auto tokens = static_cast<std::size_t>(p.total_queries());
    return {numpy_result(std::move(r.out), {tokens, heads, dim}),
            numpy_result(std::move(r.lse), {tokens, heads})};
  }
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
  m.def("_reference", &reference, "problem"_a, "Private: use leanattn.reference.");
}

}  // namespace leanattn::python
