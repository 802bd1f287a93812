// _leanattn._decode: one decode step of a Problem (problem.cpp) on the backend of q's device,
// written into outputs that the Python layer allocated in q's framework or the caller passed
// (out=, lse_out=); _leanattn._decode_planned: the fast path of a plan, caller outputs and
// PyTorch tensors, read through the DLPack exchange API with no Python object made and nothing
// allocated (python/leanattn/_decode.py is the public wrapper).
#include <nanobind/stl/string_view.h>

#include "backends.hpp"
#include "bindings.hpp"
#include "decode_views.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

// The views of this thread's calls, reused: seq_lens keeps its capacity, so a call allocates
// nothing here once the batch size has been seen.
DecodeViews& thread_views() {
  thread_local DecodeViews views;
  return views;
}

// problem: a _leanattn.Problem; out and lse (or None): the outputs of leanattn.decode's
// docstring. strategy and tile are taken without a plan (tile 0 = default); workers 0 = default;
// stream: the cudaStream_t of CUDA arrays as an integer (0 = default stream; ignored on the CPU).
void run_views(DecodeViews& views, const Plan* plan, std::string_view strategy,
               std::int32_t workers, std::int32_t tile, std::uintptr_t stream) {
  DecodeCall call;
  call.problem = &views.problem;
  call.tensors = &views.tensors;
  call.plan = plan;
  call.workers = workers;
  call.device_id = views.device.id;
  call.stream = reinterpret_cast<void*>(stream);
  translate_errors(Entry::decode, [&] {
    if (plan == nullptr) {
      call.options.strategy = parse_strategy(strategy, "strategy");
      call.options.tile_tokens = tile;
    }
    run_on(backend_for_device(views.device.type), call);
  });
}

void decode(nb::handle problem, nb::handle out, nb::handle lse, std::string_view strategy,
            std::int32_t workers, std::int32_t tile, const Plan* plan, std::uintptr_t stream) {
  DecodeViews& views = thread_views();
  read_problem(views, problem, plan);
  attach_outputs(views, out, lse);
  run_views(views, plan, strategy, workers, tile, stream);
}

// The planned fast path (read_planned): q, k_cache, v_cache (or None), out and lse (or None) as
// they are, the plan's lengths and V's width, the scale and the variants without arrays as
// values; no Python object is made, nothing allocated. Returns false, having run nothing, when
// the arrays are neither PyTorch tensors (the exchange API) nor host float32/float16 arrays (the
// caller takes _decode).
bool decode_planned(nb::handle q, nb::handle k_cache, nb::handle v_cache, nb::handle out,
                    nb::handle lse, const Plan& plan, float scale, std::int32_t workers,
                    std::uintptr_t stream, bool causal, std::int32_t window_left, float softcap) {
  DecodeViews& views = thread_views();
  const AttentionVariant variant{.causal = causal, .window_left = window_left, .softcap = softcap};
  const ArraysRead read = read_planned(views, q, k_cache, v_cache, plan, scale, variant);
  if (read == ArraysRead::none || !attach_outputs(views, out, lse, read == ArraysRead::exchanged)) {
    return false;
  }
  run_views(views, &plan, "lean", workers, 0, stream);
  return true;
}

}  // namespace

void bind_decode(nb::module_& m) {
  m.def("_decode", &decode, "problem"_a, "out"_a, "lse"_a.none(), "strategy"_a = "lean",
        "workers"_a = 0, "tile"_a = 0, "plan"_a.none() = nb::none(), "stream"_a = 0,
        "Private: use leanattn.decode.");
  m.def("_decode_planned", &decode_planned, "q"_a, "k_cache"_a, "v_cache"_a.none(), "out"_a,
        "lse"_a.none(), "plan"_a, "scale"_a, "workers"_a, "stream"_a, "causal"_a = true,
        "window_left"_a = -1, "softcap"_a = 0.0f, "Private: use leanattn.decode.");
}

}  // namespace leanattn::python
