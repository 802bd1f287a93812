// The CPU engine against the fp64 reference for every SIMD target compiled in and supported
// here, with the accuracy policy of harness/accuracy.hpp. Outputs are poisoned before each run;
// workers {1, 2, 3, 7, 64} and several tile sizes make pieces cross request and head
// boundaries; lengths include 0, 1, tile-1, tile, tile+1, 97 and one long request among short
// ones; paged layouts use shuffled block tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "cpu/engine_fixture.hpp"
#include "cpu/segment_kernel.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/sanitized.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

class EngineTest : public SimdEngineTest {
 protected:
  // Runs every strategy on `c` with `workers` threads and checks each against `ref`.
  void check_all_strategies(harness::HostCase& c, const reference::Output& ref,
                            const harness::NaiveBaseline& naive, std::int32_t workers,
                            std::int32_t tile, const std::string& what) {
    // The engine's own order (token_major: whole rows, contiguous pairs) for every strategy, and
    // the GPU's (head_major: pairs to the first free worker) for split and head.
    for (auto [s, order] : {std::pair{Strategy::lean, LineOrder::automatic},
                            std::pair{Strategy::split, LineOrder::automatic},
                            std::pair{Strategy::split, LineOrder::head_major},
                            std::pair{Strategy::head, LineOrder::automatic},
                            std::pair{Strategy::head, LineOrder::head_major}}) {
      harness::poison_outputs(c);
      Executor& e = engine(workers);
      const Plan plan = e.plan(c.problem, {.strategy = s, .order = order, .tile_tokens = tile});
      e.run(c.problem, plan, c.tensors());
      const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
      ASSERT_TRUE(a.ok()) << what << " strategy " << strategy_name(s) << " order "
                          << line_order_name(plan.order) << " workers " << workers << " tile "
                          << tile << ": err " << a.max_abs_err << " > tol " << a.tolerance
                          << ", lse err " << a.max_lse_err << ", mismatches " << a.mismatches
                          << " (" << a.first_problem << ")";
    }
  }
};

TEST_P(EngineTest, SweepsWorkersTilesAndOddLengths) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    DecodeProblem p = harness::test_problem({97, 0, 1, 63, 64, 65, 1000, 5}, 8, 2, 64, dt);
    harness::HostCase c = harness::make_case(p, 1);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    for (std::int32_t workers : {1, 2, 3, 7, 64}) {
      for (std::int32_t tile : {1, 16, 64, 0}) {
        check_all_strategies(c, ref, naive, workers, tile, std::string(dtype_name(dt)));
      }
    }
  }
}

TEST_P(EngineTest, HeadDimsAndGroupSizes) {
  for (std::int32_t d : {16, 48, 64, 128, 192, 256}) {
    for (std::int32_t group : {1, 2, 3, 4, 5, 6, 7, 8, 11, 16}) {
      DecodeProblem p = harness::test_problem({130, 33}, 2 * group, 2, d, DType::f16);
      harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(d * 100 + group));
      const auto ref = reference::naive_attention(c.problem, c.tensors());
      const auto naive = harness::naive_same_precision(c.problem, c.tensors());
      check_all_strategies(c, ref, naive, 3, 32,
                           "d " + std::to_string(d) + " group " + std::to_string(group));
    }
  }
}

TEST_P(EngineTest, OneLongRequestAmongManyShortOnesPaged) {
  for (std::int32_t page : {1, 3, 16, 128}) {
    std::vector<std::int32_t> lens = {4000};
    for (int i = 0; i < 15; ++i) lens.push_back(1 + i * 7);
    lens.push_back(0);
    DecodeProblem p = harness::test_problem(lens, 8, 1, 128, DType::bf16);
    p.layout = KvLayout::paged;
    p.page_size = page;
    harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(page));
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    for (std::int32_t workers : {2, 7, 64}) {
      check_all_strategies(c, ref, naive, workers, 0, "page " + std::to_string(page));
    }
  }
}

TEST_P(EngineTest, RandomProblems) {
  std::mt19937_64 rng(99);
  harness::RandomLimits lim;
  lim.max_len = 600;
  lim.max_workers = 64;
  lim.any_head_dim = true;
  // Under the sanitizers the first 50 of the release stage's 150 (the same seeds): every SIMD
  // target reruns them, and `leanattn check` adds sanitized random cases of its own.
  const int trials = harness::kSanitized ? 50 : 150;
  for (int trial = 0; trial < trials; ++trial) {
    harness::RandomCase rc = harness::random_case(rng, lim);
    harness::HostCase c =
        harness::make_case(rc.problem, static_cast<std::uint64_t>(trial) + 1000, rc.shared_kv);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    Executor& e = engine(rc.hardware.workers);
    e.run(c.problem, make_plan(c.problem, rc.hardware, rc.options), c.tensors());
    const harness::Accuracy a = harness::check_accuracy(c, ref, true);
    ASSERT_TRUE(a.ok()) << "trial " << trial << " err " << a.max_abs_err << " tol " << a.tolerance
                        << " lse " << a.max_lse_err << " (" << a.first_problem << ")";
  }
}

TEST_P(EngineTest, RepeatedRunsAreBitwiseIdentical) {
  DecodeProblem p = harness::test_problem({3000, 17, 900}, 16, 4, 128, DType::f16);
  harness::HostCase c = harness::make_case(p, 5);
  Executor& e = engine(7);
  const Plan plan = e.plan(c.problem, {.tile_tokens = 16});
  e.run(c.problem, plan, c.tensors());
  const std::vector<std::byte> first = c.out;
  const std::vector<float> first_lse = c.lse;
  for (int i = 0; i < 20; ++i) {
    harness::poison_outputs(c);
    e.run(c.problem, plan, c.tensors());
    ASSERT_EQ(std::memcmp(first.data(), c.out.data(), first.size()), 0) << "run " << i;
    ASSERT_EQ(std::memcmp(first_lse.data(), c.lse.data(), first_lse.size() * 4), 0);
  }
}

TEST_P(EngineTest, StridedTensorsAreReadAndWrittenInPlace) {
  DecodeProblem p = harness::test_problem({50, 0, 77}, 4, 2, 32, DType::f32);
  harness::HostCase c = harness::make_case(p, 6);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  // Output stored [q_heads, batch, head_dim] with a gap of 8 between rows; lse with a gap too.
  const std::int64_t row = 32 + 8;
  std::vector<float> out(static_cast<std::size_t>(4 * 3 * row), -1.0f);
  std::vector<float> lse(3 * 6, -1.0f);
  DecodeTensors t = c.tensors();
  t.out = out.data();
  t.out_stride_batch = row;
  t.out_stride_head = 3 * row;
  t.lse = lse.data();
  t.lse_stride_batch = 6;
  Executor& e = engine(3);
  e.run(c.problem, e.plan(c.problem, {.tile_tokens = 8}), t);
  for (std::int32_t b = 0; b < 3; ++b) {
    for (std::int32_t h = 0; h < 4; ++h) {
      for (std::int32_t i = 0; i < 32; ++i) {
        const double want = ref.out[(static_cast<std::size_t>(b) * 4 + h) * 32 + i];
        EXPECT_NEAR(out[static_cast<std::size_t>(h * 3 * row + b * row + i)], want, 1e-5);
      }
      EXPECT_EQ(out[static_cast<std::size_t>(h * 3 * row + b * row + 32)], -1.0f);  // gap kept
      const double want_lse = ref.lse[static_cast<std::size_t>(b) * 4 + h];
      if (std::isinf(want_lse)) {
        EXPECT_EQ(lse[static_cast<std::size_t>(b * 6 + h)], want_lse);
      } else {
        EXPECT_NEAR(lse[static_cast<std::size_t>(b * 6 + h)], want_lse, 1e-4);
      }
    }
  }
}

TEST_P(EngineTest, RejectsMismatchedPlansAndSmallWorkspaces) {
  DecodeProblem p = harness::test_problem({100, 20}, 2, 1, 64, DType::f32);
  harness::HostCase c = harness::make_case(p, 7);
  cpu::Engine e({.workers = 2, .simd = GetParam()});  // its own API: a caller-owned workspace
  DecodeProblem other = c.problem;
  other.seq_lens = {100, 21};
  other.capacity = 100;
  const Plan wrong = e.plan(other);
  EXPECT_THROW(e.run(c.problem, wrong, c.tensors()), Error);
  const Plan plan = e.plan(c.problem, {.tile_tokens = 16});
  alignas(64) std::byte tiny[64];
  EXPECT_THROW(e.run(c.problem, plan, c.tensors(), std::span<std::byte>(tiny, 64)), Error);
}

// The engine skips check_plan for plans it made or checked before (compared by value): an edited
// copy of such a plan is a different plan, checked and refused; the original still runs.
TEST_P(EngineTest, ChecksEditedCopiesOfItsOwnPlans) {
  DecodeProblem p = harness::test_problem({300, 45, 0}, 4, 2, 64, DType::f16);
  harness::HostCase c = harness::make_case(p, 11);
  Executor& e = engine(3);
  const Plan plan = e.plan(c.problem, {.tile_tokens = 16});
  e.run(c.problem, plan, c.tensors());
  for (int edit = 0; edit < 3; ++edit) {
    Plan broken = plan;
    Segment& s = broken.segments[broken.segments.size() / 2];
    if (edit == 0) s.tile_end = s.tile_begin;                      // a hole in its pair
    if (edit == 1) s.kv_head = (s.kv_head + 1) % broken.kv_heads;  // two segments, one pair
    if (edit == 2) broken.total_tiles += 1;                        // a wrong count
    if (broken == plan) continue;
    EXPECT_THROW(e.run(c.problem, broken, c.tensors()), Error) << "edit " << edit;
  }
  harness::poison_outputs(c);
  e.run(c.problem, plan, c.tensors());
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  EXPECT_TRUE(harness::check_accuracy(c, ref, true).ok());
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, EngineTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

// A caller's threads (EngineOptions::parallel, as the llama.cpp backend lends ggml's OpenMP
// team): every worker runs, on fewer real threads than workers and in any order, and the output
// is bitwise the engine's own pool's.
TEST(LentThreads, RunEveryWorkerAndMatchTheEnginesOwnPool) {
  harness::HostCase c =
      harness::make_case(harness::test_problem({700, 0, 129, 33, 1000}, 8, 2, 64, DType::f16), 41);
  cpu::Engine own({.workers = 5});
  const Plan plan = own.plan(c.problem, {.tile_tokens = 16});
  own.run(c.problem, plan, c.tensors());
  const std::vector<std::byte> expected = c.out;
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  ASSERT_TRUE(harness::check_accuracy(c, ref, true).ok());
  struct Calls {
    std::int32_t count = 0;
  } calls;
  // Two real threads, each taking every other worker, the second half first.
  const cpu::ParallelFor two_threads{
      [](void* context, std::int32_t threads, cpu::ParallelFor::Job job, void* jc) {
        ++static_cast<Calls*>(context)->count;
        std::thread other([&] {
          for (std::int32_t t = threads - 1; t >= 0; t -= 2) job(jc, t);
        });
        for (std::int32_t t = threads - 2; t >= 0; t -= 2) job(jc, t);
        other.join();
      },
      &calls};
  cpu::Engine lent({.workers = 5, .parallel = two_threads});
  EXPECT_EQ(lent.workers(), 5);
  harness::poison_outputs(c);
  lent.run(c.problem, plan, c.tensors());
  EXPECT_EQ(calls.count, 1);
  EXPECT_EQ(c.out, expected);
}

TEST(SimdTargets, AtLeastOneIsSupportedAndUnknownNamesAreRejected) {
  EXPECT_FALSE(cpu::simd_targets().empty());
  EXPECT_THROW(cpu::Engine({.simd = "NEON9000"}), Error);
  EXPECT_THROW(cpu::Engine({.workers = -1}), Error);
}

// The ranking (segment_kernel.hpp): every tiled kernel before the row kernels (SCALAR on x86;
// SVE and SVE2 on Arm, where NEON is the default), the first one the engine's default; lanes
// as the roofline reads them.
TEST(SimdTargets, TiledKernelsRankBeforeRowKernelsAndTheFirstIsTheDefault) {
  const std::vector<cpu::SimdKernel> kernels = cpu::supported_simd_kernels();
  ASSERT_FALSE(kernels.empty());
  bool row_seen = false;
  for (const cpu::SimdKernel& k : kernels) {
    row_seen = row_seen || k.row_kernel;
    EXPECT_TRUE(k.row_kernel || !row_seen) << k.name << " ranks after a row kernel";
    EXPECT_GE(k.f32_lanes, 1) << k.name;
    EXPECT_LE(k.f32_lanes, 16) << k.name;  // AVX-512's 16 floats; the row kernel caps SVE at 16
  }
  EXPECT_EQ(cpu::simd_targets().front(), kernels.front().name);
  EXPECT_EQ(cpu::Engine({.workers = 1}).simd_target(), kernels.front().name);
}

// The bf16 dot-product kernel is offered exactly where the CPU has the instruction (and AVX3 is
// compiled), right before AVX3, the kernel it shares all but the score loop with.
TEST(SimdTargets, Bf16DotKernelRanksBeforeAvx3WhereTheCpuHasIt) {
  const std::vector<std::string> names = cpu::simd_targets();
  const auto at = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  const bool avx3 = at("AVX3") < static_cast<std::ptrdiff_t>(names.size());
  const bool listed = at("AVX3_BF16") < static_cast<std::ptrdiff_t>(names.size());
  EXPECT_EQ(listed, avx3 && cpu::cpu_has_bf16_dot());
  if (listed) {
    EXPECT_EQ(at("AVX3_BF16") + 1, at("AVX3"));
  }
}

// Where AVX3_BF16 runs, it is the default and its score loop is another one than AVX3's: the
// same bf16 case gives other fp32 LSE bits (a dot product adds pairs in another order), both
// within the accuracy policy (the per-target suites).
TEST(SimdTargets, Bf16DotKernelIsTheDefaultAndTakesItsOwnScoreLoop) {
  if (!cpu::cpu_has_bf16_dot()) GTEST_SKIP() << "no AVX512-BF16 here";
  EXPECT_EQ(cpu::Engine({.workers = 1}).simd_target(), "AVX3_BF16");
  harness::HostCase c =
      harness::make_case(harness::test_problem({300, 77}, 8, 2, 128, DType::bf16), 41);
  std::vector<float> lse[2];
  int i = 0;
  for (const char* simd : {"AVX3", "AVX3_BF16"}) {
    harness::poison_outputs(c);
    cpu::Engine e({.workers = 1, .simd = simd});
    e.run(c.problem, e.plan(c.problem, {}), c.tensors());
    lse[i++] = c.lse;
  }
  EXPECT_NE(std::memcmp(lse[0].data(), lse[1].data(), lse[0].size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace leanattn
