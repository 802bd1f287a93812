// Zero-cost views of PyTorch tensors through the DLPack C exchange API (DLPack 1.2+: the type
// attribute `__dlpack_c_exchange_api__`, PyTorch >= 2.10). Tensor.__dlpack__ costs ~7 us per
// tensor (a Python method, a capsule, a managed tensor to free); the exchange API fills a
// non-owning DLTensor from C in ~0.1 us, with no Python call and no allocation. Every reading of
// a call's arrays tries it first (problem.cpp, output_views.cpp) and falls back to nanobind's
// import when a type has no such API.
#pragma once

#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>

namespace leanattn::python {

namespace nb = nanobind;

// A DLTensor valid while its Python object lives, read through the accessors of nb::ndarray (so
// that the readers of arrays, templated on the array, take either).
class DlView {
 public:
  std::size_t ndim() const { return static_cast<std::size_t>(t_.ndim); }
  std::size_t shape(std::size_t i) const { return static_cast<std::size_t>(t_.shape[i]); }
  std::int64_t stride(std::size_t i) const;
  std::size_t size() const;
  nb::dlpack::dtype dtype() const { return t_.dtype; }
  int device_type() const { return t_.device.device_type; }
  int device_id() const { return t_.device.device_id; }
  void* data() const { return static_cast<char*>(t_.data) + t_.byte_offset; }

  nb::dlpack::dltensor& raw() { return t_; }

 private:
  nb::dlpack::dltensor t_{};
};

// Fills `view` from `object` through its type's DLPack exchange API. False (and no Python error
// set) when the type has none, its major version is not 1, or the call fails.
bool exchange_view(nb::handle object, DlView& view);

}  // namespace leanattn::python
