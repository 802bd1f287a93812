// classify_rows() tells unwritten rows, NaN rows and numeric mismatches apart, for split and
// direct pairs (the GPU tests print it for every failed configuration).
#include "failure_kinds.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda::testing {
namespace {

TEST(FailureKinds, TellsUnwrittenNanAndMismatchedRowsApartPerPairKind) {
  harness::HostCase c =
      harness::make_case(harness::test_problem({400, 3}, 4, 2, 16, DType::f32), 1);
  const reference::Output ref = reference::naive_attention(c.problem, c.tensors());
  const Plan plan = make_plan(c.problem, {4}, {.order = LineOrder::head_major, .tile_tokens = 16});
  ASSERT_FALSE(plan.reductions.empty());
  const Reduction& r = plan.reductions.front();  // request 0 is split
  EXPECT_EQ(r.request, 0);
  // A perfect output, then damage: a split row unwritten, a direct row NaN, a direct row off.
  for (std::size_t i = 0; i < ref.out.size(); ++i) {
    const float x = static_cast<float>(ref.out[i]);
    std::memcpy(c.out.data() + i * 4, &x, 4);
  }
  EXPECT_FALSE(classify_rows(c, plan, ref, 1e-3).any());
  const std::size_t row = 16 * 4;  // bytes per row
  const std::size_t split_row = static_cast<std::size_t>(r.kv_head) * 2;
  std::memset(c.out.data() + split_row * row, 0xff, row);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(c.out.data() + 4 * row + 8, &nan, 4);  // request 1, head 0 (direct)
  const float off = 7.0f;
  std::memcpy(c.out.data() + 5 * row, &off, 4);  // request 1, head 1 (direct)
  const FailureKinds k = classify_rows(c, plan, ref, 1e-3);
  EXPECT_EQ(k.unwritten[0], 1);
  EXPECT_EQ(k.nan[1], 1);
  EXPECT_EQ(k.mismatch[1], 1);
  EXPECT_EQ(k.summary(),
            "split pairs: 1 rows never written; direct pairs: 1 rows NaN, 1 rows numeric mismatch");
}

}  // namespace
}  // namespace leanattn::cuda::testing
