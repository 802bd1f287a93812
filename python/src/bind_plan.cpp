// _leanattn.Plan (the C++ leanattn::Plan, read only) and _leanattn._make_plan. The public
// leanattn.Plan (python/leanattn/_plan.py) wraps it and adds run().
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "array_rules.hpp"
#include "backends.hpp"
#include "bindings.hpp"
#include "errors.hpp"
#include "leanattn/error.hpp"
#include "leanattn/plan_format.hpp"
#include "leanattn/planner.hpp"

namespace leanattn::python {

namespace {

using namespace nb::literals;

// seq_lens [batch] int32; workers 0 = one per core; tile, splits, chunk_tiles 0 = default. The
// order "auto" and split's split count resolve as the backend's executor does (plan_on).
// q_len and the variant (window_left -1 = none, softcap 0 = off; sinks, alibi: whether the calls
// pass them). head_dim_v: V's width, 0 = head_dim.
Plan make_plan(const SeqLensArray& seq_lens, std::int32_t q_heads, std::int32_t kv_heads,
               std::int32_t head_dim, std::string_view strategy, std::int32_t workers,
               std::int32_t tile, std::string_view order, std::int32_t splits, bool batch_invariant,
               std::int32_t chunk_tiles, std::int32_t q_len, bool causal, std::int32_t window_left,
               float softcap, bool sinks, bool alibi, const std::string& backend,
               std::int32_t head_dim_v, const std::optional<SeqLensArray>& query_start_loc) {
  return translate_errors(Entry::plan, [&] {
    DecodeProblem p;
    p.q_len = q_len;
    p.variant = {.causal = causal,
                 .window_left = window_left,
                 .softcap = softcap,
                 .sinks = sinks,
                 .alibi = alibi};
    p.q_heads = q_heads;
    p.kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.head_dim_v = head_dim_v;
    p.seq_lens.assign(seq_lens.data(), seq_lens.data() + seq_lens.shape(0));
    if (query_start_loc) {  // q_len: the counts' bound, as decode reads it
      require(query_start_loc->shape(0) >= 2, "query_start_loc", [&] {
        return "must hold batch + 1 >= 2 prefix sums (got " +
               std::to_string(query_start_loc->shape(0)) + " entries)";
      });
      const std::int32_t* s = query_start_loc->data();
      p.query_start_loc.assign(s, s + query_start_loc->shape(0));
      std::int64_t most = 1;
      for (std::size_t b = 1; b < p.query_start_loc.size(); ++b) {
        most = std::max<std::int64_t>(most, static_cast<std::int64_t>(s[b]) - s[b - 1]);
      }
      require(q_len == 1 || q_len == most, "q_len", [&] {
        return "must be 1 or the largest query count of query_start_loc, " + std::to_string(most) +
               " (got " + std::to_string(q_len) + ")";
      });
      require(most <= kMaxQLen, "query_start_loc", [&] {
        return "no request may have more than " + std::to_string(kMaxQLen) + " query tokens (got " +
               std::to_string(most) + ")";
      });
      p.q_len = static_cast<std::int32_t>(most);
    }
    p.layout = KvLayout::contiguous;  // the schedule does not depend on the cache layout
    for (std::int32_t len : p.seq_lens) p.capacity = std::max<std::int64_t>(p.capacity, len);
    PlanOptions o;
    o.strategy = parse_strategy(strategy, "strategy");
    o.order = parse_line_order(order, "order");
    o.tile_tokens = tile;
    o.splits = splits;
    o.batch_invariant = batch_invariant;
    o.chunk_tiles = chunk_tiles;
    std::string built;
    for (const std::string& name : backend_names()) {
      if (name == backend) return plan_on(name, p, o, workers, -1);  // the current device
      built += (built.empty() ? "" : ", ") + name;
    }
    throw Error("backend", "must be one of " + built + " in this build (got '" + backend + "')");
  });
}

nb::dict segment_dict(const Plan& plan, const Segment& s) {
  nb::dict d;
  d["request"] = s.request;
  d["kv_head"] = s.kv_head;
  d["tile_begin"] = s.tile_begin;
  d["tile_end"] = s.tile_end;
  const KeyRange keys = plan.tile_keys(s.request, s.tile_begin, s.tile_end);
  d["token_begin"] = keys.begin;
  d["token_end"] = keys.end;
  d["kind"] = std::string(segment_kind_name(s.kind));
  d["slot"] = s.slot;
  d["reduction"] = s.reduction;
  return d;
}

// Segments of `worker`, or of all workers (with a "worker" key) when worker < 0.
nb::list segments(const Plan& plan, std::int32_t worker) {
  if (worker >= plan.workers) {
    value_error("worker", "must be in [0, " + std::to_string(plan.workers) + ") (got " +
                              std::to_string(worker) + ")");
  }
  nb::list out;
  const std::int32_t lo = worker < 0 ? 0 : worker;
  const std::int32_t hi = worker < 0 ? plan.workers : worker + 1;
  for (std::int32_t w = lo; w < hi; ++w) {
    for (const Segment& s : plan.worker_segments(w)) {
      nb::dict d = segment_dict(plan, s);
      if (worker < 0) d["worker"] = w;
      out.append(d);
    }
  }
  return out;
}

nb::list reductions(const Plan& plan) {
  nb::list out;
  for (const Reduction& r : plan.reductions) {
    nb::dict d;
    d["request"] = r.request;
    d["kv_head"] = r.kv_head;
    d["finaliser"] = r.finaliser;
    d["slot_begin"] = r.slot_begin;
    d["num_slots"] = r.num_slots;
    out.append(d);
  }
  return out;
}

std::vector<std::int64_t> worker_tiles(const Plan& plan) {
  std::vector<std::int64_t> tiles;
  for (std::int32_t w = 0; w < plan.workers; ++w) tiles.push_back(plan.worker_tiles(w));
  return tiles;
}

}  // namespace

void bind_plan(nb::module_& m) {
  nb::class_<Plan>(m, "Plan", "Private: use leanattn.Plan.")
      .def_prop_ro("strategy", [](const Plan& p) { return std::string(strategy_name(p.strategy)); })
      .def_prop_ro("order", [](const Plan& p) { return std::string(line_order_name(p.order)); })
      .def_ro("workers", &Plan::workers)
      .def_ro("tile", &Plan::tile_tokens)
      .def_ro("splits", &Plan::splits)
      .def_ro("batch_invariant", &Plan::batch_invariant)
      .def_ro("chunk_tiles", &Plan::chunk_tiles)
      .def_ro("kv_heads", &Plan::kv_heads)
      .def_ro("group_size", &Plan::group_size)
      .def_ro("head_dim", &Plan::head_dim)
      .def_ro("head_dim_v", &Plan::head_dim_v)
      .def_ro("seq_lens", &Plan::seq_lens)
      .def_ro("query_start_loc", &Plan::query_start_loc)
      .def_ro("num_slots", &Plan::num_slots)
      .def_ro("total_tiles", &Plan::total_tiles)
      .def_prop_ro("workspace_bytes", [](const Plan& p) { return workspace_layout(p).bytes; })
      .def("segments", &segments, "worker"_a)
      .def("reductions", &reductions)
      .def("worker_tiles", &worker_tiles)
      .def("text", &format_plan_text)
      .def("picture", &format_plan_picture, "width"_a);
  m.def("_make_plan", &make_plan, "seq_lens"_a.noconvert(), "q_heads"_a, "kv_heads"_a, "head_dim"_a,
        "strategy"_a, "workers"_a, "tile"_a, "order"_a, "splits"_a, "batch_invariant"_a,
        "chunk_tiles"_a, "q_len"_a = 1, "causal"_a = true, "window_left"_a = -1, "softcap"_a = 0.0f,
        "sinks"_a = false, "alibi"_a = false, "backend"_a = "cpu", "head_dim_v"_a = 0,
        "query_start_loc"_a.noconvert().none() = nb::none(), "Private: use leanattn.plan.");
}

}  // namespace leanattn::python
