// _leanattn._Step, _step_new and _step_run: a DecodeStep (leanattn/decode_step.hpp) on the
// executor of q's device, for leanattn.DecodeStep (python/leanattn/_step.py) and the torch op's
// plan="device". The step's shape is read from the arrays it is made with (its batch the
// capacity, max_seq_len every request's bound); each run reads the arrays again and refuses,
// naming the argument, any that differ from that shape.
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
  if (got.has_query_start_loc()) {
    return {"query_start_loc",
            "a step takes one q_len for every request (pass a mixed batch to "
            "leanattn.decode)"};
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
    if (views.packed) {
      value_error("query_start_loc",
                  "a step takes one q_len for every request (pass a mixed "
                  "batch to leanattn.decode)");
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

// The lengths a device-planned call passes (seq_lens: [batch] int32 contiguous on the step's
// device), or null for a host-planned one (None).
const std::int32_t* call_lengths(const Step& step, const std::optional<InArray>& seq_lens) {
  const DecodeProblem& s = step.shape;
  const std::int32_t* lens = nullptr;
  if (seq_lens) {
    const InArray& a = *seq_lens;
    if (a.dtype() != nb::dtype<std::int32_t>() || a.ndim() != 1 ||
        a.shape(0) != static_cast<std::size_t>(s.batch()) || (a.shape(0) > 1 && a.stride(0) != 1)) {
      std::string shape;
      for (std::size_t d = 0; d < a.ndim(); ++d) {
        shape += (d ? ", " : "") + std::to_string(a.shape(d));
      }
      value_error("seq_lens", "must be a contiguous int32 array of the step's batch, [" +
                                  std::to_string(s.batch()) + "] (got " + dtype_text(a.dtype()) +
                                  " [" + shape + "])");
    }
    if (Device{a.device_type(), a.device_id()} != step.device) {
      value_error("seq_lens",
                  "must be on q's device (a device-planned step reads the lengths "
                  "where the step runs)");
    }
    lens = static_cast<const std::int32_t*>(a.data());
  }
  return lens;
}

// problem: a _leanattn.Problem of the call's arrays, with the step's settings (no seq_lens).
// seq_lens: device planning, [batch] int32 contiguous on q's device (None: refused); host
// planning, None. out and lse as decode's.
void step_run(Step& step, nb::handle problem, const std::optional<InArray>& seq_lens,
              nb::handle out, nb::handle lse, std::uintptr_t stream) {
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
    const std::int32_t* lens = call_lengths(step, seq_lens);
    attach_outputs(views, out, lse);
    nb::gil_scoped_release no_gil;
    const std::lock_guard<std::mutex> lock(step.held.executor->busy());
    step.held.step->run(lens, views.tensors, reinterpret_cast<void*>(stream));
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
          [](Step& s, const SeqLensArray& seq_lens, std::uintptr_t stream) {
            translate_errors(Entry::decode, [&] {
              nb::gil_scoped_release no_gil;
              const std::lock_guard<std::mutex> lock(s.held.executor->busy());
              s.held.step->plan(std::span(seq_lens.data(), seq_lens.shape(0)),
                                reinterpret_cast<void*>(stream));
            });
          },
          "seq_lens"_a.noconvert(), "stream"_a)
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
  m.def("_step_run", &step_run, "step"_a, "problem"_a, "seq_lens"_a.noconvert().none(), "out"_a,
        "lse"_a.none(), "stream"_a, "Private: use leanattn.DecodeStep.");
}

}  // namespace leanattn::python
