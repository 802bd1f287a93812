// _leanattn.Problem, the description of a call that the Python layer builds once
// (leanattn/_decode.py's describe: its arrays, their dtypes, V's width, the layout, the variant
// and the quantization scales) and every entry point takes (_decode, _reference, _step_new,
// _step_run), and its reading into a DecodeViews (decode_views.hpp): shapes, types and strides
// of q and the caches, checked rule by rule.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "decode_views.hpp"
#include "dlpack_exchange.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

// The fields of a Problem, as leanattn.decode names them (its docstring states the contract).
// The arrays are kept as the Python objects and read when a call runs, through the exchange API
// where their type has one.
struct ProblemArgs {
  nb::object q, k_cache;
  nb::object v_cache = nb::none(), block_table = nb::none();  // None allowed
  nb::object sinks = nb::none(), alibi_slopes = nb::none();
  nb::object k_scale = nb::none(), v_scale = nb::none();
  std::optional<SeqLensArray> seq_lens;  // None: the plan's, or a step's bound
  // [batch + 1] prefix sums of the requests' query tokens (a mixed batch), q then [total query
  // tokens, q_heads, head_dim]; None: q's own layout.
  std::optional<SeqLensArray> query_start_loc;
  float scale = 0.0f;  // 0: 1 / sqrt(head_dim)
  bool causal = true;
  std::int32_t window_left = -1;  // -1: no window
  float softcap = 0.0f;           // 0: off
  std::int32_t head_dim_v = 0;    // 0: v_cache's width, or without it the plan's / head_dim
  std::string kv_dtype, v_dtype, q_dtype;  // dtype hints (array_rules.hpp); "" = DLPack's
};

// q, k_cache and the optional v_cache and block_table of one call, read one way.
template <class Array>
struct CallArrays {
  Array q, k_cache, v_cache, block_table;
  bool has_v = false, has_table = false;
  const Array* v() const { return has_v ? &v_cache : nullptr; }
  const Array* table() const { return has_table ? &block_table : nullptr; }
};

bool exchange_all(const ProblemArgs& a, CallArrays<DlView>& c) {
  c.has_v = !a.v_cache.is_none();
  c.has_table = !a.block_table.is_none();
  return exchange_view(a.q, c.q) && exchange_view(a.k_cache, c.k_cache) &&
         (!c.has_v || exchange_view(a.v_cache, c.v_cache)) &&
         (!c.has_table || exchange_view(a.block_table, c.block_table));
}

template <class Array>
Array import_array(nb::handle object, const char* argument) {
  Array a;
  if (!nb::try_cast(object, a, false)) {
    type_error(argument, "must be an array (DLPack or the buffer protocol), got " +
                             std::string(nb::type_name(object.type()).c_str()));
  }
  return a;
}

// q, k_cache and the optional v_cache and block_table through nanobind's import: an array that
// cannot be is a TypeError naming it when `raise`, else false. `q_ok` is asked about q before the
// others are imported (false: nothing more is imported).
template <class QOk>
bool import_all(const ProblemArgs& a, CallArrays<InArray>& c, bool raise, QOk q_ok) {
  auto one = [&](nb::handle object, InArray& array, const char* argument) {
    if (raise) {
      array = import_array<InArray>(object, argument);
      return true;
    }
    return nb::try_cast(object, array, false);
  };
  c.has_v = !a.v_cache.is_none();
  c.has_table = !a.block_table.is_none();
  return one(a.q, c.q, "q") && q_ok(c.q) && one(a.k_cache, c.k_cache, "k_cache") &&
         (!c.has_v || one(a.v_cache, c.v_cache, "v_cache")) &&
         (!c.has_table || one(a.block_table, c.block_table, "block_table"));
}

// The rows of one cache (k_cache or v_cache, `argument`) of type `type`: the last dimension
// `width` values (q's head_dim for K, head_dim_v for V; `width_name` says which, `width_argument`
// is the parameter it comes from); for ggml's block formats (q8_0, q4_0) the row's bytes, width /
// 32 blocks, width a multiple of the block's 32 values (ValueError naming width_argument or the
// cache otherwise; `type_argument`, kv_dtype or v_dtype, is the parameter that named the format).
// Strides of such a uint8 cache are bytes, the unit the library counts them in for these types.
template <class Array>
void check_rows(DType type, const char* type_argument, std::size_t width, const Array& cache,
                const std::string& argument, const std::string& width_argument = "q",
                const std::string& width_name = "head_dim (q.shape[-1])") {
  if (!is_block_format(type)) {
    if (cache.shape(3) == width) return;
    value_error(argument, "head_dim (" + argument +
                              ".shape[3]) = " + std::to_string(cache.shape(3)) +
                              " must equal q's " + width_name + " = " + std::to_string(width));
  }
  const std::string name(dtype_name(type));
  if (width % kBlockValues != 0) {
    value_error(width_argument, width_name + " = " + std::to_string(width) +
                                    " must be a multiple of " + std::to_string(kBlockValues) +
                                    " for " + type_argument + "='" + name + "' (ggml's blocks of " +
                                    std::to_string(kBlockValues) + " values)");
  }
  const auto bytes = static_cast<std::size_t>(row_units(type, static_cast<std::int64_t>(width)));
  if (cache.shape(3) == bytes) return;
  value_error(argument,
              "its last dimension (" + argument + ".shape[3]) = " + std::to_string(cache.shape(3)) +
                  " must be the bytes of a " + name + " row of " + width_name + " = " +
                  std::to_string(width) + " values: " + width_name.substr(0, width_name.find(' ')) +
                  " / " + std::to_string(kBlockValues) + " * " + std::to_string(block_bytes(type)) +
                  " = " + std::to_string(bytes));
}

// V's width (head_dim_v) from v_cache's rows of type `type`: its last dimension, or for ggml's
// block formats the values of its row bytes (K's head_dim when they are a K row's bytes).
// `head_dim_v` the caller passed (0: none) must match it; V may not be wider than K (head_dim).
template <class Array>
std::int32_t value_width(DType type, const char* type_argument, std::size_t head_dim,
                         std::int32_t head_dim_v, const Array& v_cache) {
  const std::size_t last = v_cache.shape(3);
  std::size_t width = last;
  if (head_dim_v != 0 && is_block_format(type)) {
    check_rows(type, type_argument, static_cast<std::size_t>(head_dim_v), v_cache, "v_cache",
               "head_dim_v", "head_dim_v");
    width = static_cast<std::size_t>(head_dim_v);
  } else if (is_block_format(type)) {
    const auto block = static_cast<std::size_t>(block_bytes(type));
    if (last == static_cast<std::size_t>(row_units(type, static_cast<std::int64_t>(head_dim)))) {
      width = head_dim;
    } else if (last == 0 || last % block != 0) {
      check_rows(type, type_argument, head_dim, v_cache, "v_cache");  // says what K's row is
    } else {
      width = last / block * kBlockValues;
    }
  }
  if (head_dim_v != 0 && static_cast<std::size_t>(head_dim_v) != width) {
    value_error("head_dim_v",
                "must equal V's width, v_cache's last dimension "
                "(v_cache.shape[3]) = " +
                    std::to_string(width) + ", or be None to take it from v_cache (got " +
                    std::to_string(head_dim_v) + ")");
  }
  if (width == 0) {
    value_error("v_cache", "head_dim_v (v_cache.shape[3]) must be at least 16 (got 0)");
  }
  if (width > head_dim) {
    value_error("v_cache", "head_dim_v (v_cache.shape[3]) = " + std::to_string(width) +
                               " must be at most q's head_dim (q.shape[-1]) = " +
                               std::to_string(head_dim) + " (V no wider than K)");
  }
  return to_i32(width, "v_cache", "head_dim_v (v_cache.shape[3])");
}

// V's type where it differs from K's (v_dtype=): only f16, q8_0 and q4_0 mix, the pairs
// llama.cpp's -ctk / -ctv make (validate(DecodeProblem)'s rule, checked here first so that it is
// named before the scale arguments are), and only the CPU engine and the reference read them.
void check_value_type(DType k, DType v, const Device& device) {
  auto mixable = [](DType t) { return t == DType::f16 || is_block_format(t); };
  if (!mixable(k) || !mixable(v)) {
    value_error("v_dtype",
                "V's type may differ from K's only when both are f16, q8_0 or q4_0 (the pairs of "
                "llama.cpp's -ctk / -ctv); got K " +
                    std::string(dtype_name(k)) + ", V " + std::string(dtype_name(v)));
  }
  if (device.type != nb::device::cpu::value) {
    value_error("v_dtype", "K and V of different types (K " + std::string(dtype_name(k)) + ", V " +
                               std::string(dtype_name(v)) +
                               ") are read by the CPU engine and the reference only: pass host "
                               "arrays, or K and V of one type");
  }
}

// query_start_loc [batch + 1] into p (its query counts' bound as q_len), checked against q's
// `tokens` rows: ValueError naming query_start_loc for what the library's validator would
// otherwise name q_len or miss (the last entry is q's rows).
void read_query_start_loc(DecodeProblem& p, const SeqLensArray& loc, std::size_t tokens) {
  const std::size_t n = loc.shape(0);
  if (n < 2) {
    value_error("query_start_loc",
                "must hold batch + 1 >= 2 prefix sums (got " + std::to_string(n) + " entries)");
  }
  p.query_start_loc.assign(loc.data(), loc.data() + n);
  if (static_cast<std::size_t>(std::max(p.query_start_loc.back(), 0)) != tokens) {
    value_error("query_start_loc",
                "must end at q's total query tokens (q.shape[0]) = " + std::to_string(tokens) +
                    " (got " + std::to_string(p.query_start_loc.back()) + ")");
  }
  std::int64_t most = 1;
  for (std::size_t b = 0; b + 1 < n; ++b) {
    most =
        std::max<std::int64_t>(most, static_cast<std::int64_t>(loc.data()[b + 1]) - loc.data()[b]);
  }
  if (most > kMaxQLen) {
    value_error("query_start_loc", "no request may have more than " + std::to_string(kMaxQLen) +
                                       " query tokens (got " + std::to_string(most) + ")");
  }
  p.q_len = static_cast<std::int32_t>(most);
}

// The problem's arrays `c` into views.problem and views.tensors, with the lengths `lens`, or every
// request at `bound` when bound >= 0, and V's width `head_dim_v` (0: v_cache's, or head_dim).
template <class Array>
void read_arrays(DecodeViews& views, const ProblemArgs& args, const CallArrays<Array>& c,
                 std::span<const std::int32_t> lens, std::int32_t bound, std::int32_t head_dim_v) {
  const Array& q = c.q;
  const Array& k_cache = c.k_cache;
  const Array* v_cache = c.v();
  const Array* block_table = c.table();
  const std::string_view q_hint = args.q_dtype, kv_hint = args.kv_dtype, v_hint = args.v_dtype;
  const bool paged = block_table != nullptr;
  const char* kv_layout = paged ? "[num_pages, page_size, kv_heads, head_dim]"
                                : "[batch, capacity, kv_heads, head_dim]";
  const bool packed = args.query_start_loc.has_value();
  if (packed) {
    require_ndim(q, 3, "q", "[total query tokens, q_heads, head_dim] with query_start_loc");
  } else if (q.ndim() != 4) {
    require_ndim(q, 3, "q", "[batch, q_heads, head_dim] or [batch, q_len, q_heads, head_dim]");
  }
  require_ndim(k_cache, 4, "k_cache", kv_layout);
  if (v_cache != nullptr) {
    require_ndim(*v_cache, 4, "v_cache",
                 paged ? "[num_pages, page_size, kv_heads, head_dim_v]"
                       : "[batch, capacity, kv_heads, head_dim_v]");
  }

  {  // start afresh, keeping the capacity of seq_lens
    std::vector<std::int32_t> kept = std::move(views.problem.seq_lens);
    views.problem = DecodeProblem{};
    views.problem.seq_lens = std::move(kept);
    views.tensors = DecodeTensors{};
  }
  // 4-D q: [batch, q_len, q_heads, head_dim] (flash-attn's layout); 3-D means q_len = 1.
  views.token_dim = q.ndim() == 4;
  views.packed = packed;
  views.shared_kv = v_cache == nullptr;
  const std::size_t o = views.token_dim ? 1 : 0;
  views.device = device_of(q);
  require_device(k_cache, views.device, "k_cache");
  if (v_cache != nullptr) require_device(*v_cache, views.device, "v_cache");

  DecodeProblem& p = views.problem;
  p.q_dtype = element_type(q.dtype(), q_hint, "q");
  if (is_kv_only(p.q_dtype)) {
    type_error("q",
               "dtype must be float32, float16 or bfloat16 (8-bit types are for the KV "
               "cache only; got " +
                   dtype_text(q.dtype()) + ")");
  }
  p.kv_dtype = element_type(k_cache.dtype(), kv_hint, "k_cache");
  // V's type: K's unless the caller named its own (v_hint, from v_dtype=); K's in K's rows.
  DType v_type = p.kv_dtype;
  if (v_cache == nullptr && !v_hint.empty()) {
    value_error("v_dtype", "V read from K's rows (v_cache None) has K's type: pass v_dtype=None");
  }
  if (v_cache != nullptr) {
    v_type = element_type(v_cache->dtype(), v_hint.empty() ? kv_hint : v_hint, "v_cache");
  }
  if (v_type != p.kv_dtype) {
    if (v_hint.empty()) {
      type_error("v_cache", "dtype must match k_cache's (" + dtype_text(k_cache.dtype()) +
                                "), got " + dtype_text(v_cache->dtype()));
    }
    check_value_type(p.kv_dtype, v_type, views.device);
    p.v_dtype = v_type;
  }

  if (packed) read_query_start_loc(p, *args.query_start_loc, q.shape(0));
  const std::size_t batch = packed ? p.query_start_loc.size() - 1 : q.shape(0);
  const char* batch_source = packed ? " (query_start_loc's entries - 1)" : " (q.shape[0])";
  if (bound >= 0) {
    p.seq_lens.assign(batch, bound);
  } else if (lens.size() != batch) {
    value_error("seq_lens", "must hold one length per request: the batch is " +
                                std::to_string(batch) + batch_source + " but seq_lens has " +
                                std::to_string(lens.size()) + " entries");
  } else {
    p.seq_lens.assign(lens.begin(), lens.end());
  }
  if (!packed) p.q_len = o == 1 ? to_i32(q.shape(1), "q", "q_len (q.shape[1])") : 1;
  p.q_heads = to_i32(q.shape(1 + o), "q", "q_heads (q.shape[-2])");
  p.head_dim = to_i32(q.shape(2 + o), "q", "head_dim (q.shape[-1])");
  p.kv_heads = to_i32(k_cache.shape(2), "k_cache", "kv_heads (k_cache.shape[2])");
  check_rows(p.kv_dtype, "kv_dtype", q.shape(2 + o), k_cache, "k_cache");
  if (head_dim_v < 0) {
    value_error("head_dim_v", "must be >= 1, or None (got " + std::to_string(head_dim_v) + ")");
  }
  std::int32_t value_dim = 0;
  if (v_cache != nullptr) {
    // K's shape but for the last dimension: V's own rows (head_dim_v values, its own type).
    for (std::size_t i = 0; i < 3u; ++i) {
      if (v_cache->shape(i) != k_cache.shape(i)) {
        value_error("v_cache", "must have k_cache's shape " + shape_text(k_cache) +
                                   " but for its own rows in the last dimension, got " +
                                   shape_text(*v_cache));
      }
    }
    value_dim = value_width(v_type, p.v_dtype ? "v_dtype" : "kv_dtype", q.shape(2 + o), head_dim_v,
                            *v_cache);
  } else {
    value_dim = head_dim_v != 0 ? head_dim_v : p.head_dim;
    if (value_dim > p.head_dim) {
      value_error("head_dim_v",
                  "must be at most head_dim (q.shape[-1]) = " + std::to_string(p.head_dim) +
                      ": without v_cache, V is the first head_dim_v values of K's "
                      "rows (got " +
                      std::to_string(value_dim) + ")");
    }
  }
  p.head_dim_v = value_dim == p.head_dim ? 0 : value_dim;
  if (p.kv_heads < 1) value_error("k_cache", "kv_heads (k_cache.shape[2]) must be >= 1 (got 0)");
  if (p.q_heads % p.kv_heads != 0) {
    value_error("q", "q_heads (q.shape[-2]) = " + std::to_string(p.q_heads) +
                         " must be a multiple of kv_heads (k_cache.shape[2]) = " +
                         std::to_string(p.kv_heads));
  }
  p.scale = args.scale;

  DecodeTensors& t = views.tensors;
  const auto qs = strides_of(q, "q");
  const auto ks = strides_of(k_cache, "k_cache");
  t.q = data_of(q);
  // Packed: the token dimension runs over the batch (query_index), the batch stride unused.
  t.q_stride_batch = packed ? 0 : qs[0];
  t.q_stride_token = packed ? qs[0] : o == 1 ? qs[1] : 0;
  t.q_stride_head = qs[1 + o];
  t.k_cache = data_of(k_cache);
  t.k_strides = {ks[0], ks[1], ks[2]};
  if (v_cache == nullptr) {  // V in K's rows: the same pointer and strides (shares_kv)
    t.v_cache = t.k_cache;
    t.v_strides = t.k_strides;
  } else {
    const auto vs = strides_of(*v_cache, "v_cache");
    t.v_cache = data_of(*v_cache);
    t.v_strides = {vs[0], vs[1], vs[2]};
  }

  if (!paged) {
    p.layout = KvLayout::contiguous;
    if (k_cache.shape(0) != batch) {
      value_error("k_cache",
                  "must hold one row per request (contiguous layout): k_cache.shape[0] = " +
                      std::to_string(k_cache.shape(0)) + " but q has batch = " +
                      std::to_string(batch) + " (pass block_table for a paged cache)");
    }
    p.capacity = static_cast<std::int64_t>(k_cache.shape(1));
    return;
  }

  const Array& bt = *block_table;
  require_ndim(bt, 2, "block_table", "[batch, max_pages]");
  require_device(bt, views.device, "block_table");
  const auto bt_type = bt.dtype();
  if (!is_scalar(bt_type, nb::dlpack::dtype_code::Int, 32)) {
    type_error("block_table", "dtype must be int32 (got " + dtype_text(bt_type) + ")");
  }
  if (bt.shape(0) != batch) {
    value_error("block_table", "must hold one row per request: block_table.shape[0] = " +
                                   std::to_string(bt.shape(0)) +
                                   " but q has batch = " + std::to_string(batch));
  }
  const auto bs = strides_of(bt, "block_table");
  p.layout = KvLayout::paged;
  p.num_pages = static_cast<std::int64_t>(k_cache.shape(0));
  p.page_size = to_i32(k_cache.shape(1), "k_cache", "page_size (k_cache.shape[1])");
  p.max_pages = to_i32(bt.shape(1), "block_table", "max_pages (block_table.shape[1])");
  t.block_table = static_cast<const std::int32_t*>(data_of(bt));
  // A single row is never stepped over; give it the stride the validator expects.
  t.block_table_stride = bt.shape(0) <= 1 ? static_cast<std::int64_t>(bt.shape(1)) : bs[0];
}

const ProblemArgs& args_of(nb::handle problem) {
  if (!nb::isinstance<ProblemArgs>(problem)) {
    type_error("problem", "must be a _leanattn.Problem (got " +
                              std::string(nb::type_name(problem.type()).c_str()) + ")");
  }
  return nb::cast<const ProblemArgs&>(problem);
}

}  // namespace

namespace {

// Reads `args` into `views` (read_problem's rules). The arrays are read through the DLPack
// exchange API where their type has one; otherwise `any`: imported (TypeError naming an array
// that cannot be); not `any` (the planned fast path): imported host arrays with a float32 or
// float16 q, else nothing is read (ArraysRead::none).
ArraysRead read_args(DecodeViews& views, const ProblemArgs& args, const Plan* plan,
                     std::int32_t bound, bool any) {
  std::span<const std::int32_t> lens;
  if (args.seq_lens) {
    lens = std::span(args.seq_lens->data(), args.seq_lens->shape(0));
  } else if (plan != nullptr) {
    lens = plan->seq_lens;
  } else if (bound < 0) {
    value_error("seq_lens", "required unless plan is given");
  }
  std::int32_t head_dim_v = args.head_dim_v;
  if (args.v_cache.is_none() && head_dim_v == 0 && plan != nullptr) head_dim_v = plan->head_dim_v;
  // The planned fast path imports only host float32 / float16 arrays (NumPy's).
  auto importable = [any](const InArray& q) {
    const auto dt = q.dtype();
    return any || (device_of(q).type == nb::device::cpu::value &&
                   (is_scalar(dt, nb::dlpack::dtype_code::Float, 32) ||
                    is_scalar(dt, nb::dlpack::dtype_code::Float, 16)));
  };
  ArraysRead read = ArraysRead::exchanged;
  if (CallArrays<DlView> exchanged; exchange_all(args, exchanged)) {
    read_arrays(views, args, exchanged, lens, bound, head_dim_v);
  } else if (CallArrays<InArray> imported; import_all(args, imported, any, importable)) {
    read_arrays(views, args, imported, lens, bound, head_dim_v);
    read = ArraysRead::imported;
  } else {
    return ArraysRead::none;
  }
  views.q_hint = args.q_dtype;
  auto optional_array = [](nb::handle object, const char* argument) {
    return object.is_none() ? std::nullopt
                            : std::optional<InArray>(import_array<InArray>(object, argument));
  };
  attach_variant(views, args.causal, args.window_left, args.softcap,
                 optional_array(args.sinks, "sinks"),
                 optional_array(args.alibi_slopes, "alibi_slopes"));
  attach_kv_scales(views, optional_array(args.k_scale, "k_scale"),
                   optional_array(args.v_scale, "v_scale"));
  return read;
}

}  // namespace

void read_problem(DecodeViews& views, nb::handle problem, const Plan* plan, std::int32_t bound) {
  read_args(views, args_of(problem), plan, bound, true);
}

ArraysRead read_planned(DecodeViews& views, nb::handle q, nb::handle k_cache, nb::handle v_cache,
                        const Plan& plan, float scale, const AttentionVariant& variant) {
  ProblemArgs args;
  args.q = nb::borrow(q);
  args.k_cache = nb::borrow(k_cache);
  args.v_cache = nb::borrow(v_cache);
  args.scale = scale;
  args.causal = variant.causal;
  args.window_left = variant.window_left;
  args.softcap = variant.softcap;
  return read_args(views, args, &plan, -1, false);
}

const char* output_layout(const DecodeViews& views) {
  if (views.packed) return "[total query tokens, q_heads, head_dim_v]";
  return views.token_dim ? "[batch, q_len, q_heads, head_dim_v]" : "[batch, q_heads, head_dim_v]";
}

void bind_problem(nb::module_& m) {
  nb::class_<ProblemArgs>(m, "Problem", "Private: built by leanattn._decode.describe.")
      .def(
          "__init__",
          [](ProblemArgs* self, nb::object q, nb::object k_cache, nb::object v_cache,
             std::optional<SeqLensArray> seq_lens, nb::object block_table, float scale, bool causal,
             std::int32_t window_left, float softcap, std::int32_t head_dim_v, nb::object sinks,
             nb::object alibi_slopes, nb::object k_scale, nb::object v_scale, std::string kv_dtype,
             std::string v_dtype, std::string q_dtype,
             std::optional<SeqLensArray> query_start_loc) {
            new (self) ProblemArgs{.q = std::move(q),
                                   .k_cache = std::move(k_cache),
                                   .v_cache = std::move(v_cache),
                                   .block_table = std::move(block_table),
                                   .sinks = std::move(sinks),
                                   .alibi_slopes = std::move(alibi_slopes),
                                   .k_scale = std::move(k_scale),
                                   .v_scale = std::move(v_scale),
                                   .seq_lens = std::move(seq_lens),
                                   .query_start_loc = std::move(query_start_loc),
                                   .scale = scale,
                                   .causal = causal,
                                   .window_left = window_left,
                                   .softcap = softcap,
                                   .head_dim_v = head_dim_v,
                                   .kv_dtype = std::move(kv_dtype),
                                   .v_dtype = std::move(v_dtype),
                                   .q_dtype = std::move(q_dtype)};
          },
          "q"_a, "k_cache"_a, "v_cache"_a.none() = nb::none(),
          "seq_lens"_a.noconvert().none() = nb::none(), "block_table"_a.none() = nb::none(),
          "scale"_a = 0.0f, "causal"_a = true, "window_left"_a = -1, "softcap"_a = 0.0f,
          "head_dim_v"_a = 0, "sinks"_a.none() = nb::none(), "alibi_slopes"_a.none() = nb::none(),
          "k_scale"_a.none() = nb::none(), "v_scale"_a.none() = nb::none(), "kv_dtype"_a = "",
          "v_dtype"_a = "", "q_dtype"_a = "", "query_start_loc"_a.noconvert().none() = nb::none())
      // What the Python layer reads back: V's array and types (the output's width), the arrays.
      .def_ro("v_cache", &ProblemArgs::v_cache)
      .def_ro("kv_dtype", &ProblemArgs::kv_dtype)
      .def_ro("v_dtype", &ProblemArgs::v_dtype)
      .def_ro("sinks", &ProblemArgs::sinks)
      .def_ro("alibi_slopes", &ProblemArgs::alibi_slopes)
      .def_ro("k_scale", &ProblemArgs::k_scale)
      .def_ro("v_scale", &ProblemArgs::v_scale);
}

}  // namespace leanattn::python
