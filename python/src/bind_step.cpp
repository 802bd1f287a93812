// _leanattn._Step, _step_new and _step_run: a DecodeStep (leanattn/decode_step.hpp) on the
// executor of q's device, for leanattn.DecodeStep (python/leanattn/_step.py) and the torch op's
// plan="device". The step's shape is read from the arrays it is made with (its batch the
// capacity, max_seq_len every request's bound; with query_start_loc a mixed step, q's rows its
// max_query_tokens); each run reads the arrays again and refuses, naming the argument, any that
// differ from that shape.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "backends.hpp"
#include "bindings.hpp"
#include "decode_views.hpp"
#include "errors.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

struct Step {
  ExecutorStep held;
  DecodeProblem shape;  // every request at the bound
  std::int32_t max_seq_len = 0;
  Device device;
  bool shared_kv = false;  // made without v_cache: V read from K's rows
};

// The argument whose array differs from the step's shape, and how; "" when none does.
std::pair<std::string, std::string> difference(const DecodeProblem& got, const DecodeProblem& s) {
  auto text = [](std::int64_t a, std::int64_t b) {
    return " (the step's " + std::to_string(b) + ", got " + std::to_string(a) + ")";
  };
  if (got.query_start_loc != s.query_start_loc) {  // the step's own, passed again by _step.py
    return {"query_start_loc", "differs from the one the step was made with"};
  }
  if (got.batch() != s.batch()) {
    return {"q", "batch (q.shape[0]) must be the step's " + std::to_string(s.batch()) + " (got " +
                     std::to_string(got.batch()) + ")"};
  }
  if (got.q_len != s.q_len) return {"q", "q_len" + text(got.q_len, s.q_len)};
  if (got.q_heads != s.q_heads) return {"q", "q_heads" + text(got.q_heads, s.q_heads)};
  if (got.head_dim != s.head_dim) return {"q", "head_dim" + text(got.head_dim, s.head_dim)};
  if (got.q_dtype != s.q_dtype) return {"q", "dtype differs from the step's"};
  if (got.kv_heads != s.kv_heads) return {"k_cache", "kv_heads" + text(got.kv_heads, s.kv_heads)};
  if (got.kv_dtype != s.kv_dtype || got.v_dtype != s.v_dtype) {
    return {"k_cache", "dtype (or v_cache's) differs from the step's"};
  }
  if (got.layout != s.layout) return {"block_table", "given for one and not the other call"};
  if (got.capacity != s.capacity || got.page_size != s.page_size || got.num_pages != s.num_pages) {
    return {"k_cache", "shape differs from the step's"};
  }
  if (got.max_pages != s.max_pages) return {"block_table", "shape differs from the step's"};
  if (got.value_dim() != s.value_dim()) return {"v_cache", "width differs from the step's"};
  if (got.kv_scales != s.kv_scales) return {"k_scale", "layout differs from the step's"};
  if (got.variant.sinks != s.variant.sinks) return {"sinks", "given for one and not the other"};
  if (got.variant.alibi != s.variant.alibi) {
    return {"alibi_slopes", "given for one and not the other"};
  }
  return {"", ""};
}

// problem: a _leanattn.Problem of the step's arrays (no seq_lens); max_seq_len >= 1 is the Python
// layer's check; workers 0 / tile 0: defaults; planning "host" or "device".
Step* step_new(nb::handle problem, std::int32_t max_seq_len, std::string_view planning,
               std::int32_t workers, std::int32_t tile) {
  return translate_errors(Entry::decode, [&] {
    const StepPlanning where = parse_step_planning(planning, "planning");
    DecodeViews views;
    try {
      read_problem(views, problem, nullptr, max_seq_len);
      validate(views.problem);           // the lengths against the cache's capacity
    } catch (const std::exception& e) {  // every request at the bound: max_seq_len's rule
      // (the library's Error, or the ValueError read_problem raises, both "seq_lens: ...")
      const std::string_view what = e.what(), prefix = "seq_lens: ";
      if (what.substr(0, prefix.size()) != prefix) throw;
      value_error("max_seq_len", "every request of a step may have this many tokens, so: " +
                                     std::string(what.substr(prefix.size())));
    }
    PlanOptions options;
    options.tile_tokens = tile;
    const std::string backend = backend_for_device(views.device.type);
    auto step = std::make_unique<Step>();
    step->held = make_step_on(backend, views.device.id, workers, views.problem, options, where);
    step->shape = views.problem;
    step->max_seq_len = max_seq_len;
    step->device = views.device;
    step->shared_kv = views.shared_kv;
    return step.release();
  });
}

// The lengths (seq_lens: [batch]) or counts (query_start_loc: [batch + 1]) a device-planned
// call passes, `entries` int32 contiguous on the step's device, or null for a host-planned one
// (None). `name` names the argument, `layout` its shape in the message.
const std::int32_t* call_lengths(const Step& step, const std::optional<InArray>& array,
                                 const char* name, std::size_t entries, const char* layout) {
  const std::int32_t* lens = nullptr;
  if (array) {
    const InArray& a = *array;
    if (a.dtype() != nb::dtype<std::int32_t>() || a.ndim() != 1 || a.shape(0) != entries ||
        (a.shape(0) > 1 && a.stride(0) != 1)) {
      std::string shape;
      for (std::size_t d = 0; d < a.ndim(); ++d) {
        shape += (d ? ", " : "") + std::to_string(a.shape(d));
      }
      value_error(name, std::string("must be a contiguous int32 array of the step's ") + layout +
                            ", [" + std::to_string(entries) + "] (got " + dtype_text(a.dtype()) +
                            " [" + shape + "])");
    }
    if (Device{a.device_type(), a.device_id()} != step.device) {
      value_error(name,
                  "must be on q's device (a device-planned step reads the lengths "
                  "where the step runs)");
    }
    lens = static_cast<const std::int32_t*>(a.data());
  }
  return lens;
}

// problem: a _leanattn.Problem of the call's arrays, with the step's settings (no seq_lens).
// seq_lens: device planning, [batch] int32 contiguous on q's device (None: refused); host
// planning, None. query_start_loc: a mixed step's device planning, [batch + 1] as seq_lens;
// None otherwise (the step refuses a mismatch by name). out and lse as decode's.
void step_run(Step& step, nb::handle problem, const std::optional<InArray>& seq_lens,
              const std::optional<InArray>& query_start_loc, nb::handle out, nb::handle lse,
              std::uintptr_t stream) {
  const DecodeProblem& s = step.shape;
  translate_errors(Entry::decode, [&] {
    thread_local DecodeViews views;
    read_problem(views, problem, nullptr, step.max_seq_len);
    const auto [argument, rule] = difference(views.problem, s);
    if (!argument.empty()) value_error(argument, rule);
    if (views.shared_kv != step.shared_kv) {
      value_error("v_cache", "given for one and not the other");
    }
    if (views.device != step.device) value_error("q", "is on another device than the step's");
    const auto batch = static_cast<std::size_t>(s.batch());
    const std::int32_t* lens = call_lengths(step, seq_lens, "seq_lens", batch, "batch");
    const std::int32_t* loc =
        call_lengths(step, query_start_loc, "query_start_loc", batch + 1, "batch + 1");
    attach_outputs(views, out, lse);
    nb::gil_scoped_release no_gil;
    const std::lock_guard<std::mutex> lock(step.held.executor->busy());
    step.held.step->run(lens, loc, views.tensors, reinterpret_cast<void*>(stream));
  });
}

}  // namespace

void bind_step(nb::module_& m) {
  nb::class_<Step>(m, "_Step", "Private: use leanattn.DecodeStep.")
      .def_prop_ro("workers", [](const Step& s) { return s.held.step->workers(); })
      .def_prop_ro(
          "planning",
          [](const Step& s) { return std::string(step_planning_name(s.held.step->planning())); })
      .def_prop_ro("tile", [](const Step& s) { return s.held.step->tile_tokens(); })
      .def_prop_ro("batch", [](const Step& s) { return s.shape.batch(); })
      .def_prop_ro("value_dim", [](const Step& s) { return s.shape.value_dim(); })
      .def_ro("max_seq_len", &Step::max_seq_len)
      .def(
          "plan",
          [](Step& s, const SeqLensArray& seq_lens,
             const std::optional<SeqLensArray>& query_start_loc, std::uintptr_t stream) {
            translate_errors(Entry::decode, [&] {
              std::span<const std::int32_t> loc;
              if (query_start_loc)
                loc = std::span(query_start_loc->data(), query_start_loc->shape(0));
              nb::gil_scoped_release no_gil;
              const std::lock_guard<std::mutex> lock(s.held.executor->busy());
              s.held.step->plan(std::span(seq_lens.data(), seq_lens.shape(0)), loc,
                                reinterpret_cast<void*>(stream));
            });
          },
          "seq_lens"_a.noconvert(), "query_start_loc"_a.noconvert().none(), "stream"_a)
      .def(
          "check",
          [](Step& s, std::uintptr_t stream) {
            translate_errors(Entry::decode, [&] {
              nb::gil_scoped_release no_gil;
              const std::lock_guard<std::mutex> lock(s.held.executor->busy());
              s.held.step->check(reinterpret_cast<void*>(stream));
            });
          },
          "stream"_a);
  m.def("_step_new", &step_new, "problem"_a, "max_seq_len"_a, "planning"_a, "workers"_a, "tile"_a,
        nb::rv_policy::take_ownership, "Private: use leanattn.DecodeStep.");
  m.def("_step_run", &step_run, "step"_a, "problem"_a, "seq_lens"_a.noconvert().none(),
        "query_start_loc"_a.noconvert().none(), "out"_a, "lse"_a.none(), "stream"_a,
        "Private: use leanattn.DecodeStep.");
}

}  // namespace leanattn::python
