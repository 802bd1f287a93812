// The GPU kernel's arithmetic, emulated on the CPU (kernel_emulator.hpp), against the fp64
// reference with the project's accuracy policy: every compiled configuration (dtype x head_dim x
// warp rows), GQA groups that need one and two passes, the three strategies and several worker
// counts (so pieces are split and merged), ragged and empty lengths, paged layouts with shuffled
// block tables. Also: the last-arriver merge gives bitwise the same output whatever order the CTAs
// finish in, and leaves every arrival counter at 0 for the next launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "cuda/kernel_registry.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/test_problem.hpp"
#include "kernel_emulator.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda {
namespace {

std::vector<std::int32_t> in_order(const Plan& plan) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(plan.workers));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The kernel the engine would pick for the problem (GPU-side: find_kernel).
KernelHandle kernel_for(const DecodeProblem& p) {
  const KernelHandle* k = find_kernel(p);
  if (k == nullptr) {
    ADD_FAILURE() << why_unsupported(p);
    return compiled_kernels().front();
  }
  return *k;
}

// True when the build has a kernel for this dtype and head_dim (builds can be trimmed with
// LEANATTN_CUDA_HEAD_DIMS / LEANATTN_CUDA_DTYPES).
bool compiled(DType dtype, std::int32_t head_dim) {
  for (const KernelHandle& k : compiled_kernels()) {
    if (k.dtype == dtype && k.kv_bits == 16 && k.head_dim == head_dim) return true;
  }
  return false;
}

// Emulates `plan` on c and checks the output against the reference; returns the merges.
void expect_accurate(harness::HostCase& c, const Plan& plan, const reference::Output& ref,
                     const harness::NaiveBaseline& naive, const std::string& what) {
  harness::poison_outputs(c);
  const testing::EmulationResult r =
      testing::emulate_kernel(c.problem, plan, c.tensors(), kernel_for(c.problem), in_order(plan));
  const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
  ASSERT_TRUE(a.ok()) << what << ": err " << a.max_abs_err << " > tol " << a.tolerance
                      << ", lse err " << a.max_lse_err << ", mismatches " << a.mismatches << " ("
                      << a.first_problem << ")";
  EXPECT_EQ(r.merges, static_cast<std::int64_t>(plan.reductions.size())) << what;
  EXPECT_TRUE(std::all_of(r.counters.begin(), r.counters.end(), [](auto x) { return x == 0u; }))
      << what;
}

TEST(KernelEmulation, EveryCompiledConfigurationAgainstTheReference) {
  for (const KernelHandle& k : compiled_kernels()) {
    // This model reads 16-bit caches of one width (8-bit caches and DeepSeek's widths: the
    // kernel's own source on tools/cuda_emulator).
    if (k.kv_bits != 16 || k.head_dim_v != k.head_dim) continue;
    // Groups that fill one tile, a part of one, and (wide tiles) more than one pass.
    const std::vector<std::int32_t> groups = k.warps_m == 1 ? std::vector<std::int32_t>{1, 5, 16}
                                                            : std::vector<std::int32_t>{17, 64, 70};
    for (std::int32_t group : groups) {
      const std::vector<std::int32_t> lens =
          k.head_dim == 256 || group > 16 ? std::vector<std::int32_t>{130, 0, 17, 64}
                                          : std::vector<std::int32_t>{97, 0, 1, 63, 64, 65, 300};
      DecodeProblem p = harness::test_problem(lens, 2 * group, 2, k.head_dim, k.dtype);
      ASSERT_EQ(kernel_for(p).name, k.name);
      harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(k.head_dim + group));
      const auto ref = reference::naive_attention(c.problem, c.tensors());
      const auto naive = harness::naive_same_precision(c.problem, c.tensors());
      for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
        for (std::int32_t workers : {1, 7}) {
          PlanOptions o{.strategy = s, .tile_tokens = 32};
          if (s == Strategy::lean) o.order = LineOrder::head_major;
          const Plan plan = make_plan(c.problem, {workers}, o);
          expect_accurate(c, plan, ref, naive,
                          k.name + " group " + std::to_string(group) + " " +
                              std::string(strategy_name(s)) + " workers " +
                              std::to_string(workers));
        }
      }
    }
  }
}

TEST(KernelEmulation, PagedLayoutsWithShuffledBlockTables) {
  if (!compiled(DType::bf16, 128)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  for (std::int32_t page : {1, 3, 16, 64}) {
    std::vector<std::int32_t> lens = {1500};
    for (int i = 0; i < 6; ++i) lens.push_back(1 + i * 13);
    lens.push_back(0);
    DecodeProblem p = harness::test_problem(lens, 8, 1, 128, DType::bf16);
    p.layout = KvLayout::paged;
    p.page_size = page;
    harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(page));
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    for (std::int32_t workers : {3, 20}) {
      const Plan plan = make_plan(c.problem, {workers}, {.order = LineOrder::head_major});
      expect_accurate(c, plan, ref, naive, "page " + std::to_string(page));
    }
  }
}

TEST(KernelEmulation, ArrivalOrderDoesNotChangeABit) {
  const KernelHandle& k = compiled_kernels().front();
  DecodeProblem p = harness::test_problem({700, 33, 0, 260}, 16, 2, k.head_dim, k.dtype);
  harness::HostCase c = harness::make_case(p, 11);
  const Plan plan = make_plan(c.problem, {9}, {.order = LineOrder::head_major, .tile_tokens = 16});
  ASSERT_FALSE(plan.reductions.empty());
  std::vector<std::int32_t> order = in_order(plan);
  testing::emulate_kernel(c.problem, plan, c.tensors(), kernel_for(c.problem), order);
  const auto first_out = c.out;
  const auto first_lse = c.lse;
  std::mt19937 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    if (trial == 0) {
      std::reverse(order.begin(), order.end());
    } else {
      std::shuffle(order.begin(), order.end(), rng);
    }
    harness::poison_outputs(c);
    testing::emulate_kernel(c.problem, plan, c.tensors(), kernel_for(c.problem), order);
    EXPECT_EQ(c.out, first_out) << "trial " << trial;
    EXPECT_EQ(std::memcmp(c.lse.data(), first_lse.data(), c.lse.size() * 4), 0);
  }
}

TEST(KernelEmulation, RandomProblems) {
  std::mt19937_64 rng(2027);
  harness::RandomLimits lim;
  lim.quantized_kv =
      false;  // this arithmetic model reads 16-bit caches (8-bit: tools/cuda_emulator)
  lim.max_len = 400;
  lim.bias = false;           // the CUDA engine does not take a bias yet
  lim.block_kv = false;       // nor ggml's block formats
  lim.mixed_queries = false;  // nor per-request query counts
  lim.value_widths = false;   // nor K and V of different widths
  lim.max_workers = 40;
  lim.max_group = 20;
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 40; ++trial) {
    harness::RandomCase rc = harness::random_case(rng, lim);
    DecodeProblem& p = rc.problem;
    // Every compiled dtype and head_dim in turn (head_dim 256 at most every fourth trial).
    const auto& kernels = compiled_kernels();
    const KernelHandle& k = kernels[static_cast<std::size_t>(trial) % kernels.size()];
    if (k.kv_bits != 16 || k.head_dim_v != k.head_dim || (k.head_dim == 256 && trial % 4 != 0)) {
      continue;
    }
    p.q_dtype = p.kv_dtype = k.dtype;
    p.head_dim = k.head_dim;
    if (!why_unsupported(p).empty()) continue;
    if (rc.options.strategy == Strategy::lean && rc.options.order == LineOrder::automatic) {
      rc.options.order = LineOrder::head_major;
    }
    harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(trial) + 300);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    expect_accurate(c, make_plan(c.problem, rc.hardware, rc.options), ref, naive,
                    "trial " + std::to_string(trial));
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace leanattn::cuda
