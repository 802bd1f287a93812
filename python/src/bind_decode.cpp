// _leanattn._decode: one decode step on the backend of q's device, written into outputs that the
// Python layer allocated in q's framework (python/leanattn/_decode.py is the public wrapper).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string_view.h>

#include "array_views.hpp"
#include "backends.hpp"
#include "bindings.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

void run_on_device(const DecodeCall& call, const Device& device) {
  if (device.type == nb::device::cpu::value) return run_cpu(call);
#ifdef LEANATTN_PY_HAVE_CUDA
  if (device.type == nb::device::cuda::value) return run_cuda(call);
#endif
  std::string built;
  for (const char* name : backend_names()) built += std::string(built.empty() ? "" : ", ") + name;
  value_error("q", "lives on DLPack device type " + std::to_string(device.type) +
                       ", but this leanattn was built with the backends (" + built + ") only");
}

// q [batch, q_heads, head_dim]; k_cache, v_cache [batch, capacity, kv_heads, head_dim] or paged
// [num_pages, page_size, kv_heads, head_dim]; seq_lens [batch] int32; block_table [batch,
// max_pages] int32 or None; out [batch, q_heads, head_dim] in q's dtype; lse [batch, q_heads]
// float32 or None. scale 0 = 1/sqrt(head_dim); workers 0 = default; tile 0 = default; stream:
// the cudaStream_t of CUDA arrays as an integer (0 = default stream; ignored on the CPU).
void decode(const InArray& q, std::string_view q_dtype, const InArray& k_cache,
            const InArray& v_cache, std::string_view kv_dtype, const SeqLensArray& seq_lens,
            const std::optional<InArray>& block_table, const OutArray& out,
            const std::optional<OutArray>& lse, float scale, std::string_view strategy,
            std::int32_t workers, std::int32_t tile, const Plan* plan, std::uintptr_t stream) {
  DecodeViews views =
      decode_views(q, q_dtype, k_cache, v_cache, kv_dtype, seq_lens, block_table, scale);
  attach_outputs(views, out, q_dtype, lse);
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
    run_on_device(call, views.device);
  });
}

}  // namespace

void bind_decode(nb::module_& m) {
  m.def("_decode", &decode, "q"_a.noconvert(), "q_dtype"_a, "k_cache"_a.noconvert(),
        "v_cache"_a.noconvert(), "kv_dtype"_a, "seq_lens"_a.noconvert(),
        "block_table"_a.noconvert().none(), "out"_a.noconvert(), "lse"_a.noconvert().none(),
        "scale"_a, "strategy"_a, "workers"_a, "tile"_a, "plan"_a.none(), "stream"_a,
        "Private: use leanattn.decode.");
}

}  // namespace leanattn::python
