// libFuzzer target over the validators, the planner, the plan interpreter and the CPU engine.
// From the fuzz input it builds a decode problem (a mixed batch's query_start_loc among its
// fields), a worker count, plan options and output strides, then checks:
//   * validate() and make_plan() either accept or throw leanattn::Error (never crash, hang, or
//     throw anything else);
//   * every accepted plan passes check_plan();
//   * accepted output strides never make two output rows overlap (brute force);
//   * on small accepted problems, the plan interpreter matches the fp64 reference to 1e-9 (output
//     and LSE), and the CPU engine, running the same plan on NaN-poisoned outputs, passes the
//     per-row accuracy policy of harness/accuracy.hpp on both.
// Run by scripts/test.sh for a bounded time; findings become regression tests.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"

namespace {

using namespace leanattn;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "plan_fuzzer: %s\n", what);
  std::abort();
}

DecodeProblem draw_problem(FuzzedDataProvider& in) {
  DecodeProblem p;
  p.kv_heads = in.ConsumeIntegralInRange<std::int32_t>(-1, 9);
  p.q_heads = p.kv_heads * in.ConsumeIntegralInRange<std::int32_t>(0, 9) +
              in.ConsumeIntegralInRange<std::int32_t>(-1, 1);
  p.head_dim = 16 * in.ConsumeIntegralInRange<std::int32_t>(0, 37) +
               (in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<std::int32_t>(-3, 3));
  p.q_len = in.ConsumeBool() ? 1 : in.ConsumeIntegralInRange<std::int32_t>(0, 3);
  const auto batch = in.ConsumeIntegralInRange<std::int32_t>(0, 12);
  for (std::int32_t b = 0; b < batch; ++b)
    p.seq_lens.push_back(in.ConsumeIntegralInRange<std::int32_t>(-2, 600));
  p.q_dtype = p.kv_dtype = static_cast<DType>(in.ConsumeIntegralInRange<int>(0, 2));
  if (in.ConsumeBool()) {
    p.layout = KvLayout::paged;
    p.page_size = in.ConsumeIntegralInRange<std::int32_t>(-1, 130);
    p.num_pages = in.ConsumeIntegralInRange<std::int64_t>(-1, 400);
    p.max_pages = in.ConsumeIntegralInRange<std::int32_t>(-1, 700);
  } else {
    p.capacity = in.ConsumeIntegralInRange<std::int64_t>(-1, 700);
  }
  if (in.ConsumeBool()) p.scale = in.ConsumeFloatingPoint<float>();
  if (in.ConsumeBool()) {  // the variants (docs/numerics.md): windows, caps, sinks, ALiBi
    p.variant.causal = in.ConsumeBool();
    p.variant.window_left = in.ConsumeIntegralInRange<std::int32_t>(-2, 40);
    if (in.ConsumeBool()) p.variant.softcap = in.ConsumeFloatingPoint<float>();
    p.variant.sinks = in.ConsumeBool();
    p.variant.alibi = in.ConsumeBool();
  }
  if (in.ConsumeBool()) {  // a mixed batch: per-request query counts (or an invalid prefix sum)
    const std::int32_t size =
        batch + in.ConsumeIntegralInRange<std::int32_t>(0, 2) + (in.ConsumeBool() ? 0 : -1);
    std::int32_t at = in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<std::int32_t>(-1, 1);
    for (std::int32_t i = 0; i < size; ++i) {
      p.query_start_loc.push_back(at);
      at += in.ConsumeIntegralInRange<std::int32_t>(-1, p.q_len + 1);
    }
  }
  if (in.ConsumeBool()) {  // V narrower than K (or not a valid width at all)
    p.head_dim_v = 16 * in.ConsumeIntegralInRange<std::int32_t>(-1, 37) +
                   (in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<std::int32_t>(-3, 3));
  }
  return p;
}

PlanOptions draw_options(FuzzedDataProvider& in) {
  PlanOptions o;
  o.strategy = static_cast<Strategy>(in.ConsumeIntegralInRange<int>(0, 2));
  o.order = static_cast<LineOrder>(in.ConsumeIntegralInRange<int>(0, 2));
  o.tile_tokens = in.ConsumeIntegralInRange<std::int32_t>(-1, 300);
  o.splits = in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<std::int32_t>(-1, 200);
  o.batch_invariant = in.ConsumeBool();
  o.chunk_tiles = in.ConsumeIntegralInRange<std::int32_t>(-1, 20);
  return o;
}

// |a - b| <= tol, or both NaN, or the same infinity.
bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol || (std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b);
}

// Brute force: do two output rows of `d` elements overlap under these strides?
bool rows_overlap(std::int32_t batch, std::int32_t heads, std::int32_t d, std::int64_t sb,
                  std::int64_t sh) {
  std::set<std::int64_t> used;
  for (std::int32_t b = 0; b < batch; ++b) {
    for (std::int32_t h = 0; h < heads; ++h) {
      for (std::int32_t i = 0; i < d; ++i) {
        if (!used.insert(b * sb + h * sh + i).second) return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const DecodeProblem p = draw_problem(in);
  const Hardware hw{in.ConsumeIntegralInRange<std::int32_t>(-1, 400)};
  const PlanOptions options = draw_options(in);
  const std::int64_t sb = in.ConsumeIntegralInRange<std::int64_t>(-2, 3000);
  const std::int64_t sh = in.ConsumeIntegralInRange<std::int64_t>(-2, 300);
  Plan plan;
  try {
    plan = make_plan(p, hw, options);
  } catch (const Error&) {
    return 0;
  } catch (...) {
    fail("make_plan threw something other than leanattn::Error");
  }
  try {
    check_plan(plan);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fail("the planner made a plan that check_plan rejects");
  }
  harness::HostCase c;
  const std::int64_t work = p.total_tokens() * p.q_heads * p.head_dim;
  if (work > 400000) return 0;
  c = harness::make_case(p, size, in.ConsumeBool());  // V in K's rows, or its own cache
  DecodeTensors t = c.tensors();
  // Rows of the output: requests, or the query tokens of a mixed batch (query_start_loc).
  const std::int64_t rows = p.has_query_start_loc() ? p.total_queries() : p.batch();
  (p.has_query_start_loc() ? t.out_stride_token : t.out_stride_batch) = sb;
  t.out_stride_head = sh;
  bool accepted = true;
  try {
    validate(c.problem, t);
  } catch (const Error&) {
    accepted = false;
  }
  if (accepted && rows * p.q_heads * p.value_dim() <= 20000 &&
      rows_overlap(static_cast<std::int32_t>(rows), p.q_heads, p.value_dim(), sb, sh)) {
    fail("validate accepted output strides whose rows overlap");
  }
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const auto got = reference::interpret_plan(c.problem, plan, c.tensors());
  for (std::size_t i = 0; i < ref.out.size(); ++i) {
    if (!close(ref.out[i], got.out[i], 1e-9)) {
      fail("the plan interpreter disagrees with the reference");
    }
  }
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    if (!close(ref.lse[i], got.lse[i], 1e-9 * std::max(1.0, std::abs(ref.lse[i])))) {
      fail("the plan interpreter's LSE disagrees with the reference");
    }
  }
  // The CPU engine on the same plan. Scales beyond 4 are left out: fp32 scores may overflow
  // where the fp64 reference's do not, and that difference is the dtype's, not a bug.
  if (c.problem.softmax_scale() > 4.0f) return 0;
  static cpu::Engine engine({.workers = 2});
  harness::poison_outputs(c);
  engine.run(c.problem, plan, c.tensors());
  const harness::Accuracy a = harness::check_accuracy(c, ref, true);
  if (!a.ok()) {
    std::fprintf(stderr, "%s\n", a.first_problem.c_str());
    fail("the CPU engine disagrees with the reference");
  }
  return 0;
}
