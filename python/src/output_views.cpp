// The outputs of a call (decode_views.hpp): out and lse checked against the problem read before
// and pointed at by its DecodeTensors, through the DLPack exchange API where their type has one.
#include <string>

#include "decode_views.hpp"
#include "dlpack_exchange.hpp"

namespace leanattn::python {

namespace {

template <class Array>
void attach_arrays(DecodeViews& views, const Array& out, const Array* lse) {
  const DecodeProblem& p = views.problem;
  const std::size_t o = views.token_dim ? 1 : 0;  // q is [batch, q_len, q_heads, head_dim]
  const char* out_layout = output_layout(views);
  require_ndim(out, 3 + o, "out", out_layout);
  require_device(out, views.device, "out");
  if (element_type(out.dtype(), views.q_hint, "out") != p.q_dtype) {
    type_error("out", "dtype must be q's (" + std::string(dtype_name(p.q_dtype)) + ")");
  }
  // Packed (query_start_loc): rows are query tokens, the batch stride unused (query_index).
  const auto rows = static_cast<std::size_t>(views.packed ? p.total_queries() : p.batch());
  if (out.shape(0) != rows || (o && out.shape(1) != static_cast<std::size_t>(p.q_len)) ||
      out.shape(1 + o) != static_cast<std::size_t>(p.q_heads) ||
      out.shape(2 + o) != static_cast<std::size_t>(p.value_dim())) {
    std::string want = "[" + std::to_string(rows);
    if (o) want += ", " + std::to_string(p.q_len);
    want += ", " + std::to_string(p.q_heads) + ", " + std::to_string(p.value_dim()) + "]";
    value_error("out", "must have shape " + std::string(out_layout) + " = " + want +
                           " (q's, its last dimension V's width), got " + shape_text(out));
  }
  const auto os = strides_of(out, "out");
  views.tensors.out = out.size() == 0 ? nullptr : out.data();
  views.tensors.out_stride_batch = views.packed ? 0 : os[0];
  views.tensors.out_stride_token = views.packed ? os[0] : o ? os[1] : 0;
  views.tensors.out_stride_head = os[1 + o];
  if (lse == nullptr) return;
  require_ndim(*lse, 2 + o, "lse_out",
               views.packed ? "[total query tokens, q_heads]"
               : o          ? "[batch, q_len, q_heads]"
                            : "[batch, q_heads]");
  require_device(*lse, views.device, "lse_out");
  const auto lt = lse->dtype();
  if (!is_scalar(lt, nb::dlpack::dtype_code::Float, 32)) {
    type_error("lse_out", "dtype must be float32 (got " + dtype_text(lt) + ")");
  }
  if (lse->shape(0) != rows || (o && lse->shape(1) != static_cast<std::size_t>(p.q_len)) ||
      lse->shape(1 + o) != static_cast<std::size_t>(p.q_heads)) {
    value_error("lse_out", views.packed ? "must have shape [total query tokens, q_heads]"
                           : o          ? "must have shape [batch, q_len, q_heads]"
                                        : "must have shape [batch, q_heads]");
  }
  const auto ls = strides_of(*lse, "lse_out");
  views.tensors.lse = lse->size() == 0 ? nullptr : static_cast<float*>(lse->data());
  views.tensors.lse_stride_batch = views.packed ? 0 : ls[0];
  views.tensors.lse_stride_token = views.packed ? ls[0] : o ? ls[1] : 0;
}

}  // namespace

bool attach_outputs(DecodeViews& views, nb::handle out, nb::handle lse, bool exchange_only) {
  const bool has_lse = !lse.is_none();
  DlView out_view, lse_view;
  if (exchange_view(out, out_view) && (!has_lse || exchange_view(lse, lse_view))) {
    attach_arrays(views, out_view, has_lse ? &lse_view : nullptr);
    return true;
  }
  if (exchange_only) return false;
  auto import = [](nb::handle object, const char* argument) {
    OutArray a;
    if (!nb::try_cast(object, a, false)) {
      type_error(argument, "must be a writable array (DLPack or the buffer protocol), got " +
                               std::string(nb::type_name(object.type()).c_str()));
    }
    return a;
  };
  const OutArray out_array = import(out, "out");
  std::optional<OutArray> lse_array;
  if (has_lse) lse_array = import(lse, "lse_out");
  attach_arrays(views, out_array, lse_array ? &*lse_array : nullptr);
  return true;
}

}  // namespace leanattn::python
