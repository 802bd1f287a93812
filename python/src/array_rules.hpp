// The rules every array argument of the compiled module is read by: its element type, device,
// number of dimensions and strides, each broken rule raised as ValueError / TypeError naming the
// Python argument. Templated on the array: nb::ndarray (nanobind's import) or DlView (the DLPack
// exchange API, dlpack_exchange.hpp), which have the same accessors. Used by the readers of the
// problem (problem.cpp), its variant and scales (variant_views.cpp) and the outputs
// (output_views.cpp).
#pragma once

#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "errors.hpp"
#include "leanattn/dtype.hpp"

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

// Human-readable name of a DLPack dtype ("float64", "int32", "bfloat16", ...).
std::string dtype_text(const nb::dlpack::dtype& dtype);

// "cpu:0", "cuda:1", ...
std::string device_text(const Device& device);

// The element type of `a`. `hint` is what the Python layer knows about the array ("f32", "f16",
// "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "q8_0", "q4_0", or "" to read it from DLPack); "bf16"
// also accepts uint16, the view the Python layer makes of NumPy bfloat16 arrays (ml_dtypes), the
// fp8 hints uint8, the view it makes of float8 arrays (DLPack's float8 codes are not read), and
// the block formats' hints uint8, the bytes of ggml's blocks. Raises TypeError.
DType element_type(const nb::dlpack::dtype& dtype, std::string_view hint, const char* argument);

// `value` as int32, else ValueError naming `argument` ("<what> = <value> is too large").
std::int32_t to_i32(std::size_t value, const char* argument, const std::string& what);

template <class Array>
std::string shape_text(const Array& a) {
  std::string s = "[";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
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

template <class Array>
const void* data_of(const Array& a) {
  return a.size() == 0 ? nullptr : a.data();
}

// True when `dtype` is one scalar of DLPack type `code` and `bits`.
inline bool is_scalar(const nb::dlpack::dtype& dtype, nb::dlpack::dtype_code code, int bits) {
  return dtype.code == static_cast<std::uint8_t>(code) && dtype.bits == bits && dtype.lanes == 1;
}

}  // namespace leanattn::python
