// The DLPack C exchange API (dlpack_exchange.hpp). The structs below mirror dlpack.h 1.2+
// (DLPackExchangeAPIHeader, DLPackExchangeAPI) field for field; only the function this module
// calls is typed.
#include "dlpack_exchange.hpp"

#include <Python.h>

namespace leanattn::python {

namespace {

struct ExchangeHeader {
  std::uint32_t major;
  std::uint32_t minor;
  ExchangeHeader* prev_api;
};

using DlTensorFromPyObject = int (*)(void* py_object, nb::dlpack::dltensor* out);

struct ExchangeApi {
  ExchangeHeader header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  DlTensorFromPyObject dltensor_from_py_object_no_sync;
  void* current_work_stream;
};

// The API (or null) of the last few types seen: torch.Tensor, numpy.ndarray, ... GIL held. Types
// are never freed while cached: the entry holds a reference.
struct CacheEntry {
  PyTypeObject* type = nullptr;
  const ExchangeApi* api = nullptr;
};
CacheEntry cache[4];
int next_entry = 0;

const ExchangeApi* api_of(PyTypeObject* type) {
  for (const CacheEntry& e : cache) {
    if (e.type == type) return e.api;
  }
  const ExchangeApi* api = nullptr;
  PyObject* capsule =
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
  } else {
    if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
      api = static_cast<const ExchangeApi*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
      if (api != nullptr &&
          (api->header.major != 1 || api->dltensor_from_py_object_no_sync == nullptr)) {
        api = nullptr;
      }
    }
    Py_DECREF(capsule);  // the API is a static of the framework's library
  }
  CacheEntry& e = cache[next_entry];
  next_entry = (next_entry + 1) % 4;
  Py_XDECREF(reinterpret_cast<PyObject*>(e.type));
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  e = {type, api};
  return api;
}

}  // namespace

std::int64_t DlView::stride(std::size_t i) const {
  if (t_.strides != nullptr) return t_.strides[i];
  std::int64_t s = 1;  // NULL strides: compact row-major
  for (std::size_t j = i + 1; j < ndim(); ++j) s *= t_.shape[j];
  return s;
}

std::size_t DlView::size() const {
  std::size_t n = 1;
  for (std::size_t i = 0; i < ndim(); ++i) n *= shape(i);
  return n;
}

bool exchange_view(nb::handle object, DlView& view) {
  const ExchangeApi* api = api_of(Py_TYPE(object.ptr()));
  if (api == nullptr) return false;
  if (api->dltensor_from_py_object_no_sync(object.ptr(), &view.raw()) != 0) {
    PyErr_Clear();  // e.g. a tensor that requires grad: the caller takes the general path
    return false;
  }
  return true;
}

}  // namespace leanattn::python
