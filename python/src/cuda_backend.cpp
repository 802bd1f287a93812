// The CUDA backend (backends.hpp), compiled when the CUDA engine is built (python/CMakeLists.txt
// defines LEANATTN_PY_HAVE_CUDA and links leanattn_cuda). One cuda::Engine is kept per (device,
// worker count, stream): an engine's own workspace serves one stream at a time, and engines
// cache uploaded plans, so they live as long as the module. Launches are asynchronous on the
// caller's stream (the framework's current stream, passed by the Python layer), as in
// flash_attn_with_kvcache; the GIL is released while validating and launching.
#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <tuple>

#include <nanobind/nanobind.h>

#include "backends.hpp"
#include "errors.hpp"
#include "leanattn/cuda_engine.hpp"

namespace leanattn::python {

namespace nb = nanobind;

namespace {

struct CachedCudaEngine {
  CachedCudaEngine(int device, std::int32_t workers, void* stream_)
      : engine({.device = device, .workers = workers}), key(device, workers, stream_) {}
  cuda::Engine engine;
  std::tuple<int, std::int32_t, void*> key;
  std::mutex busy;  // held while a launch is being issued
};

constexpr std::size_t kMaxCudaEngines = 8;

std::list<std::shared_ptr<CachedCudaEngine>>& cuda_engines() {
  static auto* list = new std::list<std::shared_ptr<CachedCudaEngine>>();  // never destroyed:
  return *list;  // device memory must not be freed during interpreter shutdown
}

// Touched with the GIL held only.
std::shared_ptr<CachedCudaEngine> cuda_engine_for(int device, std::int32_t workers, void* stream) {
  auto& list = cuda_engines();
  const auto key = std::make_tuple(device, workers, stream);
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e->key == key; });
  if (it != list.end()) {
    list.splice(list.begin(), list, it);
    return list.front();
  }
  auto created = std::make_shared<CachedCudaEngine>(device, workers, stream);
  list.push_front(created);
  if (list.size() > kMaxCudaEngines) list.pop_back();
  return created;
}

}  // namespace

void run_cuda(const DecodeCall& call) {
  // The Python layer hands sinks and ALiBi slopes (and an 8-bit cache's scales) over as host
  // copies (_variant.py, _arrays.py), which the kernel cannot read: refuse them here rather than
  // launch with host pointers. q_len > 1,
  // windows and soft-caps carry no array and run.
  const AttentionVariant& v = call.problem->variant;
  if (v.sinks) {
    value_error("sinks",
                "not supported with CUDA arrays from Python yet (the per-head arrays "
                "reach the module as host copies); use the C++ cuda::Engine");
  }
  if (v.alibi) {
    value_error("alibi_slopes",
                "not supported with CUDA arrays from Python yet (the per-head "
                "arrays reach the module as host copies); use the C++ "
                "cuda::Engine");
  }
  // An 8-bit cache's scales reach the module as host copies too (_arrays.scale_array).
  if (is_quantized(call.problem->kv_dtype)) {
    value_error("k_scale",
                "an 8-bit cache is not supported with CUDA arrays from Python yet (its scales "
                "reach the module as host copies); use the C++ cuda::Engine");
  }
  std::shared_ptr<CachedCudaEngine> cached;
  try {
    cached = cuda_engine_for(call.device_id, call.workers, call.stream);
  } catch (const cuda::CudaError& e) {
    value_error("q", std::string("its CUDA device cannot be used: ") + e.what());
  }
  nb::gil_scoped_release no_gil;
  const std::lock_guard<std::mutex> lock(cached->busy);
  if (call.plan != nullptr) {
    cached->engine.run(*call.problem, *call.plan, *call.tensors, call.stream);
  } else {
    cached->engine.decode(*call.problem, *call.tensors, call.stream, call.options);
  }
}

}  // namespace leanattn::python
