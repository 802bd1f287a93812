// A NumPy array that owns a std::vector moved into it (no copy). Used for results computed in
// C++ (the fp64 reference). Header-only; included by bind_reference.cpp.
#pragma once

#include <nanobind/ndarray.h>

#include <initializer_list>
#include <vector>

namespace leanattn::python {

template <class T>
nanobind::ndarray<nanobind::numpy, T> numpy_result(std::vector<T>&& values,
                                                   std::initializer_list<std::size_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nanobind::ndarray<nanobind::numpy, T>(owned->data(), shape, owner);
}

}  // namespace leanattn::python
