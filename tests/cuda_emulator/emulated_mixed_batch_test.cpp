// Per-request query counts (DecodeProblem::query_start_loc: decode rows beside speculative drafts,
// multi-token prediction and short prefill chunks) in the unmodified CUDA decode kernel, run by the
// CPU emulator, against the fp64 reference with the project's accuracy policy: counts of 0, 1, 2..8
// and one at the CUDA engine's bound (256 x the group: several passes of rows), empty requests
// with and without query tokens, causal and not, windows, soft-caps, sinks and ALiBi, GQA,
// contiguous and paged caches, 16- and 8-bit caches, lean/split/head with worker counts whose
// ranges cross request and head boundaries; outputs poisoned before each run. Also what stays
// refused by name: counts past the bound, a loose bound past it, and a step (the device planner
// plans one q_len for every request).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emulated_case.hpp"
#include "emulator/emulated_capture.hpp"
#include "emulator/emulated_executor.hpp"
#include "harness/random_problem.hpp"
#include "harness/sanitized.hpp"

namespace leanattn::emulator {
namespace {

// The first configuration of this build that `fits`.
KernelInfo first_kernel(const std::function<bool(const KernelInfo&)>& fits) {
  for (const KernelInfo& k : emulated_kernels()) {
    if (fits(k)) return k;
  }
  throw Error("kernel", "no emulated configuration fits the test");
}

bool plain16(const KernelInfo& k, DType t) {
  return k.dtype == t && k.kv_bits == 16 && k.head_dim_v == k.head_dim;
}

// `counts` as query_start_loc, q_len their bound.
void set_counts(DecodeProblem& p, const std::vector<std::int32_t>& counts) {
  p.query_start_loc.assign(1, 0);
  p.q_len = 1;
  for (std::int32_t n : counts) {
    p.query_start_loc.push_back(p.query_start_loc.back() + n);
    p.q_len = std::max(p.q_len, n);
  }
}

struct MixedCase {
  const char* name;
  std::vector<std::int32_t> lens;
  std::vector<std::int32_t> counts;
  std::int32_t group;
  std::int32_t kv_heads;
  AttentionVariant variant;
  std::int32_t page_size;  // 0: contiguous
  DType dtype;
  bool kv8;
};

const MixedCase kCases[] = {
    {"speculative drafts beside decode rows, causal",
     {45, 0, 9, 17, 130, 33, 3},
     {3, 0, 1, 8, 2, 0, 3},  // request 6: the whole request is its queries
     4,
     2,
     {},
     0,
     DType::f16,
     false},
    {"GQA 3, non-causal, paged; an empty request with query tokens",
     {64, 20, 0, 7, 90},
     {5, 1, 2, 7, 0},
     3,
     2,
     {.causal = false},
     5,
     DType::bf16,
     false},
    {"window 16 + soft-cap + sinks + ALiBi, 8-bit cache, paged",
     {130, 50, 16, 2, 0},
     {6, 1, 4, 2, 0},
     2,
     2,
     {.window_left = 16, .softcap = 2.5f, .sinks = true, .alibi = true},
     7,
     DType::f16,
     true},
    {"one request at the bound: 256 x group 2 rows, several passes",
     {300, 40, 0, 257},
     {256, 1, 0, 33},
     2,
     1,
     {},
     0,
     DType::bf16,
     false},
};

TEST(EmulatedMixedBatch, PerRequestCountsAgainstTheReference) {
  int index = 0;
  for (const MixedCase& mc : kCases) {
    const KernelInfo k = first_kernel([&](const KernelInfo& x) {
      return mc.kv8 ? x.dtype == mc.dtype && x.kv_bits == 8 : plain16(x, mc.dtype);
    });
    DecodeProblem p = make_problem(mc.lens, mc.group, mc.kv_heads, k, index);
    set_counts(p, mc.counts);
    p.variant = mc.variant;
    if (mc.page_size > 0) {
      p.layout = KvLayout::paged;
      p.page_size = mc.page_size;
    }
    ASSERT_EQ(why_unsupported(p), "") << mc.name;
    Checked c = checked_case(p, static_cast<std::uint64_t>(index) + 500);
    // 3 workers: ranges cross heads and requests; 8: most pairs split over several CTAs.
    for (std::int32_t workers : {3, 8}) {
      for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
        if (harness::kSanitized && (workers + static_cast<int>(s) + index) % 2 == 0) continue;
        const Plan plan =
            EmulatedDevice::plan(c.c.problem, workers, {.strategy = s, .tile_tokens = 16});
        EmulatedDevice device;
        RunOptions o;
        o.seed = static_cast<std::uint64_t>(index * 100 + workers * 10 + static_cast<int>(s));
        EXPECT_EQ(run_and_check(device, c, plan, o), "")
            << mc.name << ": " << kernel_for(p).name << " q_len " << p.q_len << " "
            << strategy_name(s) << " workers " << workers;
      }
    }
    ++index;
  }
}

// Random mixed batches (harness::random_case's counts: 0, 1 and chunks up to 12, the variants,
// GQA ratios, layouts, 8-bit caches), moved to a configuration the kernel has, as EmulatedKernel's
// random test does; one device across the runs (its workspace reused with other counts).
TEST(EmulatedMixedBatch, RandomMixedBatchesAgainstTheReference) {
  std::mt19937_64 rng(51);
  harness::RandomLimits limits;
  limits.max_batch = 5;
  limits.bias = false;
  limits.block_kv = false;
  limits.value_widths = false;
  limits.max_kv_heads = 2;
  limits.max_len = 200;
  limits.max_workers = 24;
  EmulatedDevice device;  // kept: workspace reuse across plans and counts
  int ran = 0;
  const int wanted = harness::kSanitized ? 3 : 6;
  for (int drawn = 0; ran < wanted && drawn < 1000; ++drawn) {
    harness::RandomCase rc = harness::random_case(rng, limits);
    DecodeProblem p = rc.problem;
    if (!p.has_query_start_loc()) continue;  // only the mixed batches (a quarter of the draws)
    if (p.q_dtype == DType::f32) p.q_dtype = rng() % 2 == 0 ? DType::f16 : DType::bf16;
    if (!is_quantized(p.kv_dtype)) p.kv_dtype = p.q_dtype;
    p.head_dim = compiled_head_dim(p.head_dim);
    ASSERT_EQ(why_unsupported(p), "");
    Checked c = checked_case(p, rng());
    const auto s = static_cast<Strategy>(ran % 3);
    const Plan plan = EmulatedDevice::plan(c.c.problem, rc.hardware.workers,
                                           {.strategy = s, .tile_tokens = rc.options.tile_tokens});
    RunOptions r;
    r.seed = rng();
    r.early_landing = ran % 2 == 0 ? 0.0 : 0.2;
    std::string counts;
    for (std::int32_t b = 0; b < p.batch(); ++b) counts += " " + std::to_string(p.query_len(b));
    EXPECT_EQ(run_and_check(device, c, plan, r), "")
        << "draw " << drawn << " " << kernel_for(p).name << " counts" << counts << " "
        << strategy_name(s) << " workers " << rc.hardware.workers;
    ++ran;
  }
  EXPECT_EQ(ran, wanted);
}

// A count past the bound is refused naming query_start_loc (the request and its count); a loose
// q_len past it naming q_len, with the longest count to pass instead. Both by the lookup every
// entry point uses, so no run starts.
TEST(EmulatedMixedBatch, RefusesCountsPastTheBoundByName) {
  const KernelInfo k = first_kernel([](const KernelInfo& x) { return plain16(x, DType::f16); });
  DecodeProblem p = make_problem({400, 300, 0}, 2, 1, k);
  set_counts(p, {1, kMaxCudaQLen + 1, 0});
  std::string why = why_unsupported(p);
  EXPECT_EQ(why.rfind("query_start_loc: the CUDA engine takes at most 256 query tokens per "
                      "request (request 1 has 257",
                      0),
            0u)
      << why;
  EXPECT_THROW(kernel_for(p), Error) << why;

  set_counts(p, {1, kMaxCudaQLen, 0});
  EXPECT_EQ(why_unsupported(p), "");
  p.q_len = kMaxCudaQLen + 40;  // a bound looser than the counts
  why = why_unsupported(p);
  EXPECT_EQ(why.rfind("q_len: the CUDA engine takes at most 256", 0), 0u) << why;
  EXPECT_NE(why.find("pass the longest count (256)"), std::string::npos) << why;
  EXPECT_THROW(kernel_for(p), Error) << why;
}

// A step (device or host planning) takes one q_len for every request: a shape with
// query_start_loc is refused naming it when the step is made, before any buffer is sized.
TEST(EmulatedMixedBatch, StepsRefuseQueryStartLocByName) {
  const KernelInfo k = first_kernel([](const KernelInfo& x) { return plain16(x, DType::f16); });
  DecodeProblem shape = make_problem({40, 20}, 2, 1, k);
  set_counts(shape, {2, 1});
  const std::unique_ptr<Executor> executor = make_emulated_executor(3);
  for (StepPlanning planning : {StepPlanning::device, StepPlanning::host}) {
    try {
      executor->make_step(shape, {}, planning);
      ADD_FAILURE() << step_planning_name(planning) << ": not refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), "query_start_loc") << e.what();
    }
  }
  try {
    EmulatedCapturedStep step(shape, 3, 16);
    ADD_FAILURE() << "EmulatedCapturedStep: not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "query_start_loc") << e.what();
  }
}

}  // namespace
}  // namespace leanattn::emulator
