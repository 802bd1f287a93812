// _leanattn._merge_states: merges two normalised attention results over disjoint key sets
// (cascade or context-parallel attention) with the library's merge rules
// (core/softmax_state.hpp): an empty side (lse = -inf) is the identity, two empty sides give
// zeros and -inf, NaN propagates. Public wrapper: leanattn.merge_states.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string_view.h>

#include <cstring>
#include <limits>

#include "array_rules.hpp"
#include "bindings.hpp"
#include "errors.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;
using nb::dlpack::dtype_code;

enum class Elem { f32, f16, bf16, f64 };

Elem out_elem(const nb::dlpack::dtype& t, std::string_view hint, const char* argument) {
  if (t.code == static_cast<std::uint8_t>(dtype_code::Float) && t.bits == 64 && t.lanes == 1 &&
      hint.empty()) {
    return Elem::f64;
  }
  switch (element_type(t, hint, argument)) {
    case DType::f32:
      return Elem::f32;
    case DType::f16:
      return Elem::f16;
    case DType::bf16:
      return Elem::bf16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::int8:  // 8-bit types and block formats are for KV caches only
    case DType::q8_0:
    case DType::q4_0:
      break;
  }
  type_error(argument,
             "dtype must be float32, float16, bfloat16 or float64 (got " + dtype_text(t) + ")");
  return Elem::f32;
}

bool is_float(const nb::dlpack::dtype& t, int bits) {
  return t.code == static_cast<std::uint8_t>(dtype_code::Float) && t.bits == bits && t.lanes == 1;
}

template <class F>
F load(const void* base, Elem e, std::size_t i) {
  switch (e) {
    case Elem::f32:
      return static_cast<F>(static_cast<const float*>(base)[i]);
    case Elem::f64:
      return static_cast<F>(static_cast<const double*>(base)[i]);
    case Elem::f16:
      return static_cast<F>(f16_bits_to_float(static_cast<const std::uint16_t*>(base)[i]));
    case Elem::bf16:
      return static_cast<F>(bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[i]));
  }
  return F(0);
}

template <class F>
void store(void* base, Elem e, std::size_t i, F v) {
  switch (e) {
    case Elem::f32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      return;
    case Elem::f64:
      static_cast<double*>(base)[i] = static_cast<double>(v);
      return;
    case Elem::f16:
      static_cast<std::uint16_t*>(base)[i] = float_to_f16_bits(static_cast<float>(v));
      return;
    case Elem::bf16:
      static_cast<std::uint16_t*>(base)[i] = float_to_bf16_bits(static_cast<float>(v));
      return;
  }
}

// A normalised result (output row o, lse) as a softmax state: m = lse, l = 1, o = output; the
// empty state is m = -inf, l = 0 (softmax_state.hpp).
template <class F>
SoftmaxStats<F> state_of(F lse) {
  return {lse, lse == -std::numeric_limits<F>::infinity() ? F(0) : F(1)};
}

struct MergeArgs {
  const void *oa, *ob, *la, *lb;
  void *o, *l;
  Elem out, lse;
  std::size_t rows, dim;
};

template <class F>
void merge_rows(const MergeArgs& a) {
  for (std::size_t r = 0; r < a.rows; ++r) {
    const MergeWeights<F> w =
        merge_weights(state_of(load<F>(a.la, a.lse, r)), state_of(load<F>(a.lb, a.lse, r)));
    const Finalized<F> f = finalize(w.merged);
    for (std::size_t i = r * a.dim; i < (r + 1) * a.dim; ++i) {
      const F o = w.scale_a * load<F>(a.oa, a.out, i) + w.scale_b * load<F>(a.ob, a.out, i);
      store<F>(a.o, a.out, i, o * f.inv_l);
    }
    store<F>(a.l, a.lse, r, f.lse);
  }
}

template <class Array>
void require_dense(const Array& x, std::size_t ndim, std::size_t rows, std::size_t dim,
                   const char* argument) {
  const bool shape_ok = x.ndim() == ndim && x.shape(0) == rows && (ndim == 1 || x.shape(1) == dim);
  if (!shape_ok) value_error(argument, "has the wrong shape for a merge");
  if (x.device_type() != nb::device::cpu::value) {
    value_error(argument, "merge_states() runs on the host: pass CPU arrays");
  }
  const bool dense = rows <= 1 || x.stride(0) == static_cast<std::int64_t>(ndim == 1 ? 1 : dim);
  if (!dense || (ndim == 2 && dim > 1 && x.stride(1) != 1)) {
    value_error(argument, "must be contiguous");
  }
}

// out_a, out_b, out: [rows, head_dim] in one dtype (float32, float16, bfloat16 or float64);
// lse_a, lse_b, lse: [rows] in float32 or float64. All contiguous host arrays.
void merge_states(const InArray& out_a, const InArray& lse_a, const InArray& out_b,
                  const InArray& lse_b, const OutArray& out, const OutArray& lse,
                  std::string_view out_dtype) {
  if (out_a.ndim() != 2) value_error("out_a", "must be [rows, head_dim]");
  const std::size_t rows = out_a.shape(0), dim = out_a.shape(1);
  require_dense(out_a, 2, rows, dim, "out_a");
  require_dense(out_b, 2, rows, dim, "out_b");
  require_dense(out, 2, rows, dim, "out");
  require_dense(lse_a, 1, rows, dim, "lse_a");
  require_dense(lse_b, 1, rows, dim, "lse_b");
  require_dense(lse, 1, rows, dim, "lse");
  MergeArgs a{};
  a.out = out_elem(out_a.dtype(), out_dtype, "out_a");
  if (out_elem(out_b.dtype(), out_dtype, "out_b") != a.out ||
      out_elem(out.dtype(), out_dtype, "out") != a.out) {
    type_error("out_b", "dtype must match out_a's (" + dtype_text(out_a.dtype()) + ")");
  }
  if (!is_float(lse_a.dtype(), 32) && !is_float(lse_a.dtype(), 64)) {
    type_error("lse_a", "dtype must be float32 or float64 (got " + dtype_text(lse_a.dtype()) + ")");
  }
  if (lse_b.dtype() != lse_a.dtype() || lse.dtype() != lse_a.dtype()) {
    type_error("lse_b", "dtype must match lse_a's (" + dtype_text(lse_a.dtype()) + ")");
  }
  a.lse = is_float(lse_a.dtype(), 64) ? Elem::f64 : Elem::f32;
  a.rows = rows;
  a.dim = dim;
  const bool empty = rows == 0 || dim == 0;
  a.oa = empty ? nullptr : out_a.data();
  a.ob = empty ? nullptr : out_b.data();
  a.o = empty ? nullptr : out.data();
  a.la = rows == 0 ? nullptr : lse_a.data();
  a.lb = rows == 0 ? nullptr : lse_b.data();
  a.l = rows == 0 ? nullptr : lse.data();
  nb::gil_scoped_release no_gil;
  if (a.out == Elem::f64 || a.lse == Elem::f64) {
    merge_rows<double>(a);
  } else {
    merge_rows<float>(a);
  }
}

}  // namespace

void bind_merge(nb::module_& m) {
  m.def("_merge_states", &merge_states, "out_a"_a.noconvert(), "lse_a"_a.noconvert(),
        "out_b"_a.noconvert(), "lse_b"_a.noconvert(), "out"_a.noconvert(), "lse"_a.noconvert(),
        "out_dtype"_a, "Private: use leanattn.merge_states.");
}

}  // namespace leanattn::python
