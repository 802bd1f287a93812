// The baselines at their best on the CPU: head and split in token_major order deal their pairs
// contiguously and in whole token rows, split takes the CPU's split count, and the GPU's plans
// (make_plan's defaults: head_major, FA2's rule) are unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/planner.hpp"

namespace leanattn {
namespace {

const PlanOptions kCpu{.order = LineOrder::token_major, .split_rule = SplitRule::even_workers};

PlanOptions cpu(Strategy s) {
  PlanOptions o = kCpu;
  o.strategy = s;
  if (s != Strategy::split) o.split_rule = SplitRule::automatic;
  return o;
}

TEST(BaselinePlans, TheCpuEngineChoosesTokenMajorAndItsSplitRule) {
  for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
    const PlanOptions o = cpu::cpu_plan_options({.strategy = s});
    EXPECT_EQ(o.order, LineOrder::token_major) << strategy_name(s);
    EXPECT_EQ(o.split_rule, s == Strategy::split ? SplitRule::even_workers : SplitRule::automatic);
  }
  // An explicit choice is kept.
  EXPECT_EQ(
      cpu::cpu_plan_options({.strategy = Strategy::head, .order = LineOrder::head_major}).order,
      LineOrder::head_major);
}

// 32/8 heads, batch 1, 262k tokens, 2 workers: heads 0-3 to worker 0, 4-7 to worker 1, whole
// (head, and split forced to 1 split).
TEST(BaselinePlans, HeadDealsContiguousPairs) {
  const DecodeProblem p = harness::test_problem({262144}, 32, 8, 128);
  for (Strategy s : {Strategy::head, Strategy::split}) {
    PlanOptions o = cpu(s);
    if (s == Strategy::split) o.splits = 1;
    const Plan plan = make_plan(p, {2}, o);
    check_plan(plan);
    EXPECT_EQ(plan.order, LineOrder::token_major);
    EXPECT_TRUE(plan.reductions.empty());
    for (std::int32_t w = 0; w < 2; ++w) {
      const auto segs = plan.worker_segments(w);
      ASSERT_EQ(segs.size(), 4u);
      for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(segs[i].kv_head, w * 4 + static_cast<std::int32_t>(i));
        EXPECT_EQ(segs[i].tile_begin, 0);
        EXPECT_EQ(segs[i].tile_end, 2048);
      }
    }
  }
  // The GPU's plan (make_plan's default) still deals the pairs to the first free worker.
  const Plan gpu = make_plan(p, {2}, {.strategy = Strategy::head});
  EXPECT_EQ(gpu.order, LineOrder::head_major);
  EXPECT_EQ(gpu.worker_segments(0)[1].kv_head, 2);
}

// Batch 1, 2 workers: the CPU rule gives 2 splits, one half of the tokens each, for MQA (FA2's
// rule agrees) and for 32/8 heads, where every head's half makes lean's whole-row cut (FA2's
// rule says 1 split). Batch 4: 1 split, whole requests.
TEST(BaselinePlans, SplitHalvesTheTokensInWholeRows) {
  const DecodeProblem mqa_1 = harness::test_problem({262144}, 16, 1, 128);
  const DecodeProblem gqa_1 = harness::test_problem({262144}, 32, 8, 128);
  const DecodeProblem gqa_4 = harness::test_problem({16384, 16384, 16384, 16384}, 32, 8, 128);
  const Plan mqa = make_plan(mqa_1, {2}, cpu(Strategy::split));
  check_plan(mqa);
  EXPECT_EQ(mqa.splits, 2);
  ASSERT_EQ(mqa.worker_segments(0).size(), 1u);
  EXPECT_EQ(mqa.worker_segments(0)[0].tile_end, 1024);
  EXPECT_EQ(mqa.worker_segments(1)[0].tile_begin, 1024);

  const Plan split = make_plan(gqa_1, {2}, cpu(Strategy::split));
  check_plan(split);
  EXPECT_EQ(split.splits, 2);
  EXPECT_EQ(make_plan(gqa_1, {2}, {.strategy = Strategy::split}).splits, 1);
  const Plan b4 = make_plan(gqa_4, {2}, cpu(Strategy::split));
  EXPECT_EQ(b4.splits, 1);
  EXPECT_EQ(b4.worker_tiles(0), b4.worker_tiles(1));
  for (std::int32_t w = 0; w < 2; ++w) {
    const auto segs = split.worker_segments(w);
    ASSERT_EQ(segs.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(segs[i].kv_head, static_cast<std::int32_t>(i));
      EXPECT_EQ(segs[i].tile_begin, w * 1024);
      EXPECT_EQ(segs[i].tile_end, (w + 1) * 1024);
    }
  }
}

// Random problems: every worker's segments follow the request -> chunk -> head order, so workers
// own contiguous runs (worker w's run ends before worker w + 1's starts) and read rows: within a
// request, consecutive segments cover the same tiles for ascending heads or move on to later
// tiles. Loads are within one chunk of an equal share, and head plans have one segment per pair.
TEST(BaselinePlans, TokenMajorDealsAreContiguousRowsAndBalanced) {
  std::mt19937_64 rng(20);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto kv = static_cast<std::int32_t>(1 + rng() % 8);
    std::vector<std::int32_t> lens(1 + rng() % 5);
    for (auto& l : lens) l = static_cast<std::int32_t>(rng() % 3 == 0 ? rng() % 40 : rng() % 3000);
    if (*std::max_element(lens.begin(), lens.end()) == 0) lens[0] = 1;
    const DecodeProblem p = harness::test_problem(lens, kv * 2, kv, 128);
    const auto workers = static_cast<std::int32_t>(1 + rng() % 12);
    const Strategy s = rng() % 2 ? Strategy::split : Strategy::head;
    PlanOptions o = cpu(s);
    o.tile_tokens = 16 << (rng() % 4);
    if (s == Strategy::split && rng() % 3 == 0) o.splits = static_cast<std::int32_t>(1 + rng() % 6);
    const Plan plan = make_plan(p, {workers}, o);
    check_plan(plan);
    auto key = [&](const Segment& g) { return std::tuple(g.request, g.tile_begin, g.kv_head); };
    std::int64_t max_chunk = 0;
    for (const Segment& g : plan.segments)
      max_chunk = std::max(max_chunk, std::int64_t{g.tile_end - g.tile_begin});
    for (std::int32_t w = 0; w < workers; ++w) {
      const auto segs = plan.worker_segments(w);
      for (std::size_t i = 1; i < segs.size(); ++i) {
        ASSERT_LT(key(segs[i - 1]), key(segs[i])) << "trial " << trial << " worker " << w;
      }
      const double share = static_cast<double>(plan.total_tiles) / workers;
      EXPECT_LE(static_cast<double>(plan.worker_tiles(w)), share + static_cast<double>(max_chunk))
          << "trial " << trial;
      EXPECT_GE(static_cast<double>(plan.worker_tiles(w)), share - static_cast<double>(max_chunk))
          << "trial " << trial;
      if (w + 1 < workers && !segs.empty() && !plan.worker_segments(w + 1).empty()) {
        EXPECT_LT(key(segs.back()), key(plan.worker_segments(w + 1).front()));
      }
    }
    if (s == Strategy::head) {
      EXPECT_EQ(plan.segments.size(), lens.size() * static_cast<std::size_t>(kv));
    }
  }
}

}  // namespace
}  // namespace leanattn
