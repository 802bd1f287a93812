// _leanattn._decode: one decode step on the backend of q's device, written into outputs that the
// Python layer allocated in q's framework or the caller passed (out=, lse_out=);
// _leanattn._decode_planned: the fast path for PyTorch tensors with a plan and caller outputs,
// read through the DLPack exchange API (python/leanattn/_decode.py is the public wrapper).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string_view.h>

#include "array_views.hpp"
#include "backends.hpp"
#include "bindings.hpp"
#include "dlpack_exchange.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

// The executor of the arrays' DLPack device type (the executor seam names them).
void run_on_device(const DecodeCall& call, const Device& device) {
  run_on(backend_for_device(device.type), call);
}

// The views of this thread's calls, reused: seq_lens keeps its capacity, so a call allocates
// nothing here once the batch size has been seen.
DecodeViews& thread_views() {
  thread_local DecodeViews views;
  return views;
}

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
    run_on_device(call, views.device);
  });
}

// q [batch, (q_len,) q_heads, head_dim]; k_cache [batch, capacity, kv_heads, head_dim] or paged
// [num_pages, page_size, kv_heads, head_dim], v_cache the same with rows of head_dim_v, or None
// (V the leading head_dim_v values of K's rows; head_dim_v 0 = v_cache's, or head_dim without
// it: decode_views); seq_lens [batch] int32; block_table
// [batch, max_pages] int32 or None; out [batch, (q_len,) q_heads, head_dim_v] in q's dtype; lse
// [batch, (q_len,) q_heads] float32 or None; sinks, alibi_slopes [q_heads] float32 or None;
// k_scale, v_scale: an 8-bit cache's float32 scales (attach_kv_scales) or None; all of them on
// q's device. scale 0 = 1/sqrt(head_dim); workers 0 = default; tile 0 = default; stream: the
// cudaStream_t of CUDA arrays as an integer (0 = default stream; ignored on the CPU). v_dtype:
// V's type where the caller named it ("f16", "q8_0", "q4_0"; "" = K's: decode_views).
void decode(const InArray& q, std::string_view q_dtype, const InArray& k_cache,
            const std::optional<InArray>& v_cache, std::string_view kv_dtype,
            const SeqLensArray& seq_lens, const std::optional<InArray>& block_table,
            const OutArray& out, const std::optional<OutArray>& lse, float scale,
            std::string_view strategy, std::int32_t workers, std::int32_t tile, const Plan* plan,
            std::uintptr_t stream, bool causal, std::int32_t window_left, float softcap,
            const std::optional<HeadArray>& sinks, const std::optional<HeadArray>& alibi_slopes,
            const std::optional<ScaleArray>& k_scale, const std::optional<ScaleArray>& v_scale,
            std::string_view v_dtype, std::int32_t head_dim_v) {
  DecodeViews& views = thread_views();
  decode_views(views, q, q_dtype, k_cache, v_cache ? &*v_cache : nullptr, kv_dtype, v_dtype,
               head_dim_v, std::span<const std::int32_t>(seq_lens.data(), seq_lens.shape(0)),
               block_table ? &*block_table : nullptr, scale);
  attach_outputs(views, out, q_dtype, lse ? &*lse : nullptr);
  attach_variant(views, causal, window_left, softcap, sinks, alibi_slopes);
  attach_kv_scales(views, k_scale, v_scale);
  run_views(views, plan, strategy, workers, tile, stream);
}

// The same for a contiguous cache, plan's seq_lens, and q, k_cache, v_cache, out, lse (or None)
// of a type with the DLPack exchange API (PyTorch): no Python call, no allocation. v_cache None:
// V in K's rows, head_dim_v 0 = the plan's. The variants
// without arrays (causal, window_left, softcap: Gemma 2's soft-cap, a sliding layer) come as
// values; sinks and ALiBi take _decode. Returns false, having done nothing, when one of them is
// not such an object (the caller takes _decode).
bool decode_planned(nb::handle q, nb::handle k_cache, nb::handle v_cache, nb::handle out,
                    nb::handle lse, const Plan& plan, float scale, std::int32_t workers,
                    std::uintptr_t stream, bool causal, std::int32_t window_left, float softcap,
                    std::int32_t head_dim_v) {
  DlView qv, kv, vv, ov, lv;
  const bool has_lse = !lse.is_none();
  const bool has_v = !v_cache.is_none();
  if (!exchange_view(q, qv) || !exchange_view(k_cache, kv) ||
      (has_v && !exchange_view(v_cache, vv)) || !exchange_view(out, ov) ||
      (has_lse && !exchange_view(lse, lv))) {
    return false;
  }
  if (!has_v && head_dim_v == 0) head_dim_v = plan.head_dim_v;
  DecodeViews& views = thread_views();
  decode_views(views, qv, "", kv, has_v ? &vv : nullptr, "", "", head_dim_v, plan.seq_lens,
               static_cast<const DlView*>(nullptr), scale);
  attach_outputs(views, ov, "", has_lse ? &lv : nullptr);
  attach_variant(views, causal, window_left, softcap, std::nullopt, std::nullopt);
  attach_kv_scales(views, std::nullopt, std::nullopt);  // an 8-bit cache needs _decode's scales
  run_views(views, &plan, "lean", workers, 0, stream);
  return true;
}

}  // namespace

void bind_decode(nb::module_& m) {
  m.def("_decode", &decode, "q"_a.noconvert(), "q_dtype"_a, "k_cache"_a.noconvert(),
        "v_cache"_a.noconvert().none(), "kv_dtype"_a, "seq_lens"_a.noconvert(),
        "block_table"_a.noconvert().none(), "out"_a.noconvert(), "lse"_a.noconvert().none(),
        "scale"_a, "strategy"_a, "workers"_a, "tile"_a, "plan"_a.none(), "stream"_a,
        "causal"_a = true, "window_left"_a = -1, "softcap"_a = 0.0f,
        "sinks"_a.noconvert().none() = nb::none(), "alibi_slopes"_a.noconvert().none() = nb::none(),
        "k_scale"_a.noconvert().none() = nb::none(), "v_scale"_a.noconvert().none() = nb::none(),
        "v_dtype"_a = "", "head_dim_v"_a = 0, "Private: use leanattn.decode.");
  m.def("_decode_planned", &decode_planned, "q"_a, "k_cache"_a, "v_cache"_a.none(), "out"_a,
        "lse"_a.none(), "plan"_a, "scale"_a, "workers"_a, "stream"_a, "causal"_a = true,
        "window_left"_a = -1, "softcap"_a = 0.0f, "head_dim_v"_a = 0,
        "Private: use leanattn.decode.");
}

}  // namespace leanattn::python
