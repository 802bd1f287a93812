// The bad-input catalogue (see bad_inputs.hpp). Each entry starts from a valid case and breaks
// exactly one rule, so a missing check shows up as "accepted" rather than as a crash elsewhere.
#include "checks/bad_inputs.hpp"

#include <cmath>
#include <limits>

#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"
#include "leanattn/planner.hpp"

namespace leanattn::checks {

namespace {

DecodeProblem base_problem() {
  return harness::test_problem({40, 0, 17}, 4, 2, 64, DType::f32);
}

DecodeProblem paged_problem() {
  DecodeProblem p = base_problem();
  p.capacity = 0;
  p.layout = KvLayout::paged;
  p.page_size = 8;
  return p;
}

// An entry that edits the problem before decode().
BadInput problem_rule(std::string name, std::string argument, std::string rule,
                      std::function<void(DecodeProblem&)> edit, bool paged = false) {
  return {std::move(name), std::move(argument), std::move(rule), [edit, paged](cpu::Engine& e) {
            harness::HostCase c = harness::make_case(paged ? paged_problem() : base_problem(), 1);
            DecodeProblem p = c.problem;
            edit(p);
            e.decode(p, c.tensors());
          }};
}

// An entry that edits the tensors (host case is valid) before decode().
BadInput tensor_rule(std::string name, std::string argument, std::string rule,
                     std::function<void(harness::HostCase&, DecodeTensors&)> edit,
                     bool paged = false) {
  return {std::move(name), std::move(argument), std::move(rule), [edit, paged](cpu::Engine& e) {
            harness::HostCase c = harness::make_case(paged ? paged_problem() : base_problem(), 2);
            DecodeTensors t = c.tensors();
            edit(c, t);
            e.decode(c.problem, t);
          }};
}

// An int8 cache with per-(token, head) scales (contiguous or paged), valid until an entry breaks
// it.
DecodeProblem quantized_problem(bool paged) {
  DecodeProblem p = paged ? paged_problem() : base_problem();
  p.kv_dtype = DType::int8;
  p.kv_scales = KvScales::per_token_head;
  return p;
}

// An entry that edits the tensors of a quantized case before decode().
BadInput quantized_rule(std::string name, std::string argument, std::string rule,
                        std::function<void(harness::HostCase&, DecodeTensors&)> edit,
                        DecodeProblem problem = quantized_problem(false)) {
  return {std::move(name), std::move(argument), std::move(rule), [edit, problem](cpu::Engine& e) {
            harness::HostCase c = harness::make_case(problem, 5);
            DecodeTensors t = c.tensors();
            edit(c, t);
            e.decode(c.problem, t);
          }};
}

// An entry that breaks a plan option.
BadInput option_rule(std::string name, std::string argument, std::string rule, Hardware hw,
                     PlanOptions options) {
  return {std::move(name), std::move(argument), std::move(rule),
          [hw, options](cpu::Engine&) { make_plan(base_problem(), hw, options); }};
}

}  // namespace

std::vector<BadInput> bad_inputs() {
  std::vector<BadInput> v;
  v.push_back(problem_rule("no requests", "seq_lens", "one length per request",
                           [](auto& p) { p.seq_lens.clear(); }));
  v.push_back(problem_rule("negative length", "seq_lens", "must be >= 0",
                           [](auto& p) { p.seq_lens[1] = -1; }));
  v.push_back(problem_rule("length over capacity", "seq_lens", "capacity", [](auto& p) {
    p.seq_lens[0] = static_cast<std::int32_t>(p.capacity) + 1;
  }));
  v.push_back(problem_rule(
      "length over max_pages x page_size", "seq_lens", "max_pages",
      [](auto& p) { p.seq_lens[0] = p.max_pages * p.page_size + 1; }, true));
  v.push_back(problem_rule("q_heads not a multiple of kv_heads", "q_heads", "multiple of kv_heads",
                           [](auto& p) { p.q_heads = 3; }));
  v.push_back(
      problem_rule("zero kv_heads", "kv_heads", "must be in [1", [](auto& p) { p.kv_heads = 0; }));
  v.push_back(problem_rule("absurd head count", "q_heads", "must be in [1",
                           [](auto& p) { p.q_heads = 1 << 30; }));
  v.push_back(problem_rule("unsupported head_dim", "head_dim", "multiple of 16",
                           [](auto& p) { p.head_dim = 100; }));
  v.push_back(problem_rule("head_dim too large", "head_dim", "multiple of 16 in [16, 576]",
                           [](auto& p) { p.head_dim = 592; }));
  v.push_back(problem_rule("head_dim_v wider than head_dim", "head_dim_v",
                           "head_dim = ", [](auto& p) { p.head_dim_v = p.head_dim + 16; }));
  v.push_back(problem_rule("head_dim_v not a multiple of 16", "head_dim_v", "multiple of 16",
                           [](auto& p) { p.head_dim_v = 8; }));
  v.push_back(
      problem_rule("q_len 0", "q_len", "must be in [1, 8192]", [](auto& p) { p.q_len = 0; }));
  v.push_back(problem_rule("q_len too large", "q_len", "must be in [1, 8192]",
                           [](auto& p) { p.q_len = 8193; }));
  v.push_back(problem_rule("q_len over a non-empty length", "seq_lens", "must be 0 or >= q_len",
                           [](auto& p) { p.q_len = 20; }));
  v.push_back(problem_rule("query_start_loc of the wrong size", "query_start_loc",
                           "must hold batch + 1", [](auto& p) {
                             p.query_start_loc = {0, 1};
                           }));
  v.push_back(problem_rule("query_start_loc not from 0", "query_start_loc", "must start at 0",
                           [](auto& p) { p.query_start_loc.assign(p.seq_lens.size() + 1, 1); }));
  v.push_back(problem_rule("query_start_loc decreasing", "query_start_loc", "must not decrease",
                           [](auto& p) {
                             p.query_start_loc.assign(p.seq_lens.size() + 1, 0);
                             p.query_start_loc[1] = 1;
                           }));
  v.push_back(
      problem_rule("query count over q_len", "query_start_loc", "more than q_len", [](auto& p) {
        p.query_start_loc.assign(p.seq_lens.size() + 1, 0);
        for (std::size_t b = 1; b < p.query_start_loc.size(); ++b) p.query_start_loc[b] = 2;
      }));
  v.push_back(problem_rule("query count over a non-empty length", "seq_lens",
                           "request 0's query token count", [](auto& p) {
                             p.q_len = 8192;
                             p.query_start_loc.assign(p.seq_lens.size() + 1, 8000);
                             p.query_start_loc[0] = 0;
                           }));
  v.push_back(problem_rule("negative window", "window_left", ">= 0, or -1",
                           [](auto& p) { p.variant.window_left = -2; }));
  v.push_back(problem_rule("negative softcap", "softcap", "finite and >= 0",
                           [](auto& p) { p.variant.softcap = -1.0f; }));
  v.push_back(problem_rule("NaN softcap", "softcap", "finite", [](auto& p) {
    p.variant.softcap = std::numeric_limits<float>::quiet_NaN();
  }));
  v.push_back(problem_rule("sinks missing", "sinks", "must not be null",
                           [](auto& p) { p.variant.sinks = true; }));
  v.push_back(problem_rule("ALiBi slopes missing", "alibi_slopes", "must not be null",
                           [](auto& p) { p.variant.alibi = true; }));
  v.push_back(tensor_rule("sinks without the variant", "sinks", "must be null unless",
                          [](auto& c, auto& t) { t.sinks = c.lse.data(); }));
  v.push_back(problem_rule("bias missing", "bias", "must not be null",
                           [](auto& p) { p.variant.bias = true; }));
  v.push_back(problem_rule("8-bit bias_dtype", "bias_dtype", "must be f32, f16 or bf16",
                           [](auto& p) { p.bias_dtype = DType::int8; }));
  v.push_back(tensor_rule("bias without the variant", "bias", "must be null unless",
                          [](auto& c, auto& t) { t.bias = c.lse.data(); }));
  v.push_back(
      problem_rule("negative scale", "scale", "finite and >= 0", [](auto& p) { p.scale = -0.5f; }));
  v.push_back(problem_rule("infinite scale", "scale", "finite",
                           [](auto& p) { p.scale = std::numeric_limits<float>::infinity(); }));
  v.push_back(problem_rule(
      "page size 0", "page_size", ">= 1", [](auto& p) { p.page_size = 0; }, true));
  v.push_back(
      tensor_rule("null q", "q", "must not be null", [](auto&, auto& t) { t.q = nullptr; }));
  v.push_back(tensor_rule("null k_cache", "k_cache", "must not be null",
                          [](auto&, auto& t) { t.k_cache = nullptr; }));
  v.push_back(tensor_rule("null v_cache", "v_cache", "must not be null",
                          [](auto&, auto& t) { t.v_cache = nullptr; }));
  v.push_back(
      tensor_rule("null out", "out", "must not be null", [](auto&, auto& t) { t.out = nullptr; }));
  v.push_back(tensor_rule("misaligned q", "q", "aligned",
                          [](auto&, auto& t) { t.q = static_cast<const char*>(t.q) + 2; }));
  v.push_back(tensor_rule("misaligned lse", "lse", "aligned", [](auto&, auto& t) {
    t.lse = reinterpret_cast<float*>(reinterpret_cast<char*>(t.lse) + 1);
  }));
  v.push_back(tensor_rule("negative stride", "k_strides.token", ">= 0",
                          [](auto&, auto& t) { t.k_strides.token = -t.k_strides.token; }));
  v.push_back(tensor_rule("overlapping output rows", "out", "overlap",
                          [](auto&, auto& t) { t.out_stride_head = 1; }));
  v.push_back(tensor_rule("out overlaps q", "out", "must not overlap q",
                          [](auto&, auto& t) { t.out = const_cast<void*>(t.q); }));
  v.push_back(tensor_rule("out overlaps k_cache", "out", "must not overlap k_cache",
                          [](auto&, auto& t) { t.out = const_cast<void*>(t.k_cache); }));
  v.push_back(tensor_rule("lse overlaps out", "lse", "must not overlap out",
                          [](auto&, auto& t) { t.lse = static_cast<float*>(t.out); }));
  v.push_back(tensor_rule(
      "null block table", "block_table", "must not be null",
      [](auto&, auto& t) { t.block_table = nullptr; }, true));
  v.push_back(tensor_rule(
      "block-table entry out of range", "block_table", "num_pages",
      [](auto& c, auto& t) {
        c.block_table[0] = static_cast<std::int32_t>(c.problem.num_pages);
        t.block_table = c.block_table.data();
      },
      true));
  v.push_back(tensor_rule(
      "negative block-table entry", "block_table", "num_pages",
      [](auto& c, auto& t) {
        c.block_table[static_cast<std::size_t>(2 * c.problem.max_pages)] = -7;
        t.block_table = c.block_table.data();
      },
      true));
  v.push_back(problem_rule("8-bit q_dtype", "q_dtype", "must be f32, f16 or bf16",
                           [](auto& p) { p.q_dtype = DType::fp8_e4m3; }));
  v.push_back(problem_rule("8-bit kv_dtype without scales", "kv_scales", "got none",
                           [](auto& p) { p.kv_dtype = DType::int8; }));
  v.push_back(problem_rule("scales on an f32 cache", "kv_scales", "must be none",
                           [](auto& p) { p.kv_scales = KvScales::per_tensor; }));
  v.push_back(problem_rule("block-format q_dtype", "q_dtype", "must be f32, f16 or bf16",
                           [](auto& p) { p.q_dtype = DType::q4_0; }));
  v.push_back(problem_rule("q8_0 rows of 48 values", "head_dim", "multiple of 32", [](auto& p) {
    p.kv_dtype = DType::q8_0;
    p.head_dim = 48;
  }));
  v.push_back(problem_rule("q8_0 V of 48 values", "head_dim_v", "multiple of 32", [](auto& p) {
    p.kv_dtype = DType::q8_0;
    p.head_dim = 64;
    p.head_dim_v = 48;
  }));
  v.push_back(problem_rule("f32 K with a q8_0 V", "v_dtype", "only with both f16, q8_0 or q4_0",
                           [](auto& p) {
                             p.kv_dtype = DType::f32;
                             p.v_dtype = DType::q8_0;
                             p.head_dim = 64;
                           }));
  v.push_back(problem_rule("scales on a q4_0 cache", "kv_scales", "inside its blocks", [](auto& p) {
    p.kv_dtype = DType::q4_0;
    p.head_dim = 64;
    p.kv_scales = KvScales::per_tensor;
  }));
  v.push_back({"V in K's rows of another type", "v_dtype", "must be kv_dtype when V is read from K",
               [](cpu::Engine& e) {
                 DecodeProblem p = base_problem();
                 p.q_dtype = DType::f16;
                 p.kv_dtype = DType::q8_0;
                 p.v_dtype = DType::f16;
                 harness::HostCase c = harness::make_case(p, 3);
                 DecodeTensors t = c.tensors();
                 t.v_cache = t.k_cache;  // K's byte strides would be read as f16 elements
                 t.v_strides = t.k_strides;
                 e.decode(c.problem, t);
               }});
  v.push_back(quantized_rule("null k_scale", "k_scale", "must not be null",
                             [](auto&, auto& t) { t.k_scale = nullptr; }));
  v.push_back(quantized_rule("v_scale on an unquantized cache", "v_scale", "must be null",
                             [](auto& c, auto& t) {
                               c.problem.kv_dtype = DType::f16;
                               c.problem.kv_scales = KvScales::none;
                               t.k_scale = nullptr;
                             }));
  v.push_back(quantized_rule("per-tensor scale that moves", "k_scale_strides",
                             "must be 0, 0, 0 for per_tensor",
                             [](auto& c, auto&) { c.problem.kv_scales = KvScales::per_tensor; }));
  v.push_back(quantized_rule("per-head scale that moves with the token", "v_scale_strides",
                             "for per_kv_head", [](auto& c, auto& t) {
                               c.problem.kv_scales = KvScales::per_kv_head;
                               t.k_scale_strides = {0, 0, 1};
                             }));
  v.push_back(quantized_rule("negative scale stride", "k_scale_strides", ">= 0",
                             [](auto&, auto& t) { t.k_scale_strides.token = -1; }));
  v.push_back(quantized_rule("misaligned v_scale", "v_scale", "aligned", [](auto&, auto& t) {
    t.v_scale = reinterpret_cast<const float*>(reinterpret_cast<const char*>(t.v_scale) + 1);
  }));
  v.push_back(quantized_rule("NaN k_scale", "k_scale", "finite and > 0", [](auto& c, auto&) {
    c.k_scale[7] = std::numeric_limits<float>::quiet_NaN();
  }));
  v.push_back(quantized_rule("infinite v_scale", "v_scale", "finite and > 0", [](auto& c, auto&) {
    c.v_scale[3] = std::numeric_limits<float>::infinity();
  }));
  v.push_back(quantized_rule("zero k_scale", "k_scale", "finite and > 0",
                             [](auto& c, auto&) { c.k_scale[0] = 0.0f; }));
  v.push_back(quantized_rule(
      "negative v_scale, paged", "v_scale", "finite and > 0",
      [](auto& c, auto&) {  // token 5 of request 2 (length 17): its page's row
        const std::int32_t page = c.block_table[static_cast<std::size_t>(2 * c.problem.max_pages)];
        c.v_scale[static_cast<std::size_t>((page * c.problem.page_size + 5) * c.problem.kv_heads +
                                           1)] = -1.0f;
      },
      quantized_problem(true)));
  // lse (12 floats) lies inside k_scale (240 floats), away from every other buffer.
  v.push_back(quantized_rule("lse overlaps k_scale", "lse", "must not overlap k_scale",
                             [](auto& c, auto& t) { t.lse = c.k_scale.data() + 8; }));
  v.push_back(option_rule("zero workers", "workers", "(got 0)", {0}, {}));
  v.push_back(option_rule("absurd workers", "workers", "must be in [1", {1 << 30}, {}));
  v.push_back(option_rule("negative tile", "tile", "(got -4)", {2}, {.tile_tokens = -4}));
  v.push_back(option_rule("too many splits", "splits", "(got 1000)", {2},
                          {.strategy = Strategy::split, .splits = 1000}));
  v.push_back({"workspace too small", "workspace", "at least", [](cpu::Engine& e) {
                 harness::HostCase c = harness::make_case(base_problem(), 3);
                 const Plan plan = e.plan(c.problem, {.tile_tokens = 4});
                 alignas(64) std::byte tiny[64];
                 e.run(c.problem, plan, c.tensors(), std::span<std::byte>(tiny, sizeof tiny));
               }});
  v.push_back({"plan for another variant", "plan", "variant", [](cpu::Engine& e) {
                 harness::HostCase c = harness::make_case(base_problem(), 4);
                 DecodeProblem other = c.problem;
                 other.variant.window_left = 8;
                 e.run(c.problem, e.plan(other), c.tensors());
               }});
  v.push_back({"plan for another problem", "plan", "seq_lens", [](cpu::Engine& e) {
                 harness::HostCase c = harness::make_case(base_problem(), 4);
                 DecodeProblem other = c.problem;
                 other.seq_lens[0] -= 1;
                 e.run(c.problem, e.plan(other), c.tensors());
               }});
  v.push_back({"engine with negative workers", "workers", "must be in [0",
               [](cpu::Engine&) { cpu::Engine bad({.workers = -3}); }});
  v.push_back({"unknown SIMD target", "simd", "must be one of",
               [](cpu::Engine&) { cpu::Engine bad({.simd = "AVX9000"}); }});
  return v;
}

std::string run_bad_input(const BadInput& b, cpu::Engine& engine) {
  try {
    b.call(engine);
  } catch (const Error& e) {
    if (e.argument() != b.argument) {
      return "rejected, but named '" + e.argument() + "' instead of '" + b.argument +
             "': " + e.what();
    }
    if (std::string(e.what()).find(b.rule) == std::string::npos) {
      return "rejected, but the message lacks '" + b.rule + "': " + e.what();
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("threw a non-leanattn exception: ") + e.what();
  }
  return "accepted";
}

}  // namespace leanattn::checks
