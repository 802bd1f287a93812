// The plan interpreter matches the fp64 reference to 1e-12 on 2500 random problems and plans
// (800 under the sanitizers; all strategies, workers 1..300, tile sizes 1..128, lengths 0, 1,
// tile-1, tile, tile+1, 97, GQA ratios 1..16, paged layouts with page sizes 1, 3, 16, 128 and
// shuffled block tables), and rejects inconsistent plans.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/host_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/sanitized.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

void expect_close(const reference::Output& got, const reference::Output& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.out.size(), want.out.size());
  for (std::size_t i = 0; i < want.out.size(); ++i) {
    ASSERT_NEAR(got.out[i], want.out[i], tol) << what << " out[" << i << "]";
  }
  for (std::size_t i = 0; i < want.lse.size(); ++i) {
    if (std::isinf(want.lse[i])) {
      ASSERT_EQ(got.lse[i], want.lse[i]) << what << " lse[" << i << "]";
    } else {
      ASSERT_NEAR(got.lse[i], want.lse[i], tol * std::max(1.0, std::abs(want.lse[i])))
          << what << " lse[" << i << "]";
    }
  }
}

TEST(PlanInterpreter, MatchesReferenceOnRandomProblemsAndPlans) {
  std::mt19937_64 rng(42);
  harness::RandomLimits lim;
  lim.max_len = 400;
  lim.max_batch = 5;
  // Under the sanitizers (asan and tsan stages) 800 of the 2500: the release stage runs all.
  const int trials = harness::kSanitized ? 800 : 2500;
  int cases = 0;
  for (int trial = 0; trial < trials; ++trial) {
    harness::RandomCase rc = harness::random_case(rng, lim);
    harness::HostCase c =
        harness::make_case(rc.problem, static_cast<std::uint64_t>(trial), rc.shared_kv);
    const auto want = reference::naive_attention(c.problem, c.tensors());
    const Plan plan = make_plan(c.problem, rc.hardware, rc.options);
    const auto got = reference::interpret_plan(c.problem, plan, c.tensors());
    expect_close(got, want, 1e-12,
                 "trial " + std::to_string(trial) + " strategy " +
                     std::string(strategy_name(rc.options.strategy)) + " workers " +
                     std::to_string(rc.hardware.workers));
    ++cases;
  }
  EXPECT_EQ(cases, trials);
}

TEST(PlanInterpreter, SweepsWorkersAcrossRequestAndHeadBoundaries) {
  harness::HostCase c = harness::make_case(
      harness::test_problem({97, 1, 0, 15, 16, 17, 300}, 6, 2, 32, DType::bf16), 7);
  const auto want = reference::naive_attention(c.problem, c.tensors());
  for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
    for (std::int32_t tile : {1, 3, 16, 64}) {
      for (std::int32_t workers = 1; workers <= 300; workers += (workers < 20 ? 1 : 37)) {
        const Plan plan = make_plan(c.problem, {workers}, {.strategy = s, .tile_tokens = tile});
        expect_close(reference::interpret_plan(c.problem, plan, c.tensors()), want, 1e-12,
                     std::string(strategy_name(s)) + " tile " + std::to_string(tile) + " workers " +
                         std::to_string(workers));
      }
    }
  }
}

TEST(PlanInterpreter, RejectsInconsistentPlans) {
  harness::HostCase c = harness::make_case(harness::test_problem({100, 50}, 2, 1, 16), 8);
  const Plan good = make_plan(c.problem, {3}, {.tile_tokens = 16});

  Plan dropped = good;  // a segment lost: tiles uncovered
  dropped.segments.erase(dropped.segments.begin());
  for (auto& off : dropped.worker_offsets) off = std::max<std::int64_t>(0, off - 1);
  EXPECT_THROW(reference::interpret_plan(c.problem, dropped, c.tensors()), Error);

  Plan other = good;  // made for other lengths
  other.seq_lens = {100, 51};
  EXPECT_THROW(reference::interpret_plan(c.problem, other, c.tensors()), Error);

  Plan wrong_kind = good;  // a split pair's piece marked direct
  for (Segment& s : wrong_kind.segments) {
    if (s.kind == SegmentKind::partial) {
      s.kind = SegmentKind::direct;
      break;
    }
  }
  EXPECT_THROW(reference::interpret_plan(c.problem, wrong_kind, c.tensors()), Error);
}

}  // namespace
}  // namespace leanattn
