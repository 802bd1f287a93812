// Properties of every plan the planner makes, on thousands of random problems: exact coverage,
// lean balance within one tile, at most one continued and one left-over pair per lean worker,
// determinism, the workspace bound, and batch invariance of the chunked mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/random_problem.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"

namespace leanattn {
namespace {

bool same_plan(const Plan& a, const Plan& b) {
  auto seg = [](const Segment& s) {
    return std::tie(s.request, s.kv_head, s.tile_begin, s.tile_end, s.kind, s.slot, s.reduction);
  };
  if (a.segments.size() != b.segments.size() || a.worker_offsets != b.worker_offsets ||
      a.reductions.size() != b.reductions.size() || a.num_slots != b.num_slots) {
    return false;
  }
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    if (seg(a.segments[i]) != seg(b.segments[i])) return false;
  }
  return true;
}

// Lean shape. head_major: loads within one tile, and only a worker's first non-empty segment
// may continue a pair started by another worker, only its last may leave tiles to another.
// token_major: the same per KV head (whole tile rows are cut), loads within one row (kv_heads
// tiles), and every segment of a worker in one request covers the same tiles.
// `costs`: lean's cost of each tile of each request (lean_tile_costs; empty: 1 each). A worker
// takes the tiles that start in its share of the cost, so by cost its load is within one tile of
// its share: loads differ by at most one tile (equal costs) or two of the dearest.
void expect_lean_shape(const Plan& plan, const std::vector<std::vector<std::int64_t>>& costs = {}) {
  const bool rows = plan.order == LineOrder::token_major;
  const std::int32_t per_pair_ends = rows ? plan.kv_heads : 1;
  auto cost = [&](std::int32_t request, std::int32_t tile) {
    return costs.empty() ? std::int64_t{1}
                         : costs[static_cast<std::size_t>(request)][static_cast<std::size_t>(tile)];
  };
  std::int64_t lo = -1, hi = 0, unit = 1;  // worker loads in cost; the largest tile's cost
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    std::int64_t load = 0;
    for (const Segment& s : plan.worker_segments(w)) {
      for (std::int32_t t = s.tile_begin; t < s.tile_end; ++t) {
        load += cost(s.request, t);
        unit = std::max(unit, cost(s.request, t));
      }
    }
    lo = lo < 0 ? load : std::min(lo, load);
    hi = std::max(hi, load);
    for (std::int32_t h = 0; h < per_pair_ends; ++h) {
      std::vector<const Segment*> segs;
      for (const Segment& s : plan.worker_segments(w)) {
        if (s.tile_end > s.tile_begin && (!rows || s.kv_head == h)) segs.push_back(&s);
      }
      for (std::size_t i = 0; i < segs.size(); ++i) {
        const Segment& s = *segs[i];
        const bool continues = s.tile_begin > 0;
        const bool leaves = s.tile_end < plan.tiles_of(s.request);
        EXPECT_TRUE(!continues || i == 0) << "worker " << w << " continues a pair mid-range";
        EXPECT_TRUE(!leaves || i + 1 == segs.size())
            << "worker " << w << " leaves a pair mid-range";
      }
    }
    if (rows) {
      const auto segs = plan.worker_segments(w);
      for (std::size_t i = 1; i < segs.size(); ++i) {
        if (segs[i].request == segs[i - 1].request) {
          EXPECT_EQ(segs[i].tile_begin, segs[i - 1].tile_begin);
          EXPECT_EQ(segs[i].tile_end, segs[i - 1].tile_end);
          EXPECT_EQ(segs[i].kv_head, segs[i - 1].kv_head + 1);
        }
      }
    }
  }
  EXPECT_LE(hi - lo, (costs.empty() ? 1 : 2) * unit * (rows ? plan.kv_heads : 1))
      << "lean loads must differ by at most one " << (rows ? "tile row" : "tile") << "'s cost";
  EXPECT_LE(plan.num_slots, 2 * plan.workers * per_pair_ends);
  const WorkspaceLayout ws = workspace_layout(plan);
  const std::int64_t bound =
      2LL * plan.workers * per_pair_ends * plan.group_size * (plan.head_dim + 2) * 4 +
      static_cast<std::int64_t>(plan.reductions.size()) * 4 + 4 * 64;
  EXPECT_LE(ws.bytes, bound);
}

TEST(PlannerProperties, RandomProblemsAllStrategies) {
  std::mt19937_64 rng(20261129);
  harness::RandomLimits lim;
  lim.max_batch = 40;
  lim.max_kv_heads = 8;
  lim.max_len = 5000;
  for (int trial = 0; trial < 3000; ++trial) {
    harness::RandomCase c = harness::random_case(rng, lim);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Plan plan = make_plan(c.problem, c.hardware, c.options);
    ASSERT_NO_THROW(check_plan(plan));
    EXPECT_TRUE(same_plan(plan, make_plan(c.problem, c.hardware, c.options)));
    if (c.options.strategy == Strategy::lean && !c.options.batch_invariant) {
      expect_lean_shape(plan, lean_tile_costs(c.problem, plan.tile_tokens));
    }
    if (c.options.strategy == Strategy::head) {
      EXPECT_TRUE(plan.reductions.empty());
    }
    if (c.options.strategy == Strategy::split) {
      for (const Reduction& r : plan.reductions) EXPECT_LE(r.num_slots, plan.splits);
    }
  }
}

TEST(PlannerProperties, IssueExamplePlanIsBalanced) {
  const DecodeProblem p = harness::test_problem({5000, 300, 17}, 2, 2, 128);
  const Plan plan = make_plan(p, {5}, {.tile_tokens = 128});
  // Tiles per pair: 40, 40, 3, 3, 1, 1 = 88; ranges start at floor(w * 88 / 5).
  EXPECT_EQ(plan.total_tiles, 88);
  const std::int64_t want[5] = {17, 18, 17, 18, 18};
  for (int w = 0; w < 5; ++w) EXPECT_EQ(plan.worker_tiles(w), want[w]) << w;
  // Request 0 head 0 spans workers 0..2: finalised by worker 0, merged from 3 slots.
  ASSERT_FALSE(plan.reductions.empty());
  EXPECT_EQ(plan.reductions[0].request, 0);
  EXPECT_EQ(plan.reductions[0].kv_head, 0);
  EXPECT_EQ(plan.reductions[0].finaliser, 0);
  EXPECT_EQ(plan.reductions[0].num_slots, 3);
}

TEST(PlannerProperties, TokenMajorGivesWholeTileRows) {
  const DecodeProblem p = harness::test_problem({262144}, 32, 8, 128);
  const Plan plan = make_plan(p, {2}, {.order = LineOrder::token_major});
  check_plan(plan);
  expect_lean_shape(plan);
  // Two workers, 2048 tile rows: worker 0 takes rows [0, 1024) of every head, worker 1 the rest.
  ASSERT_EQ(plan.worker_segments(0).size(), 8u);
  for (const Segment& s : plan.worker_segments(0)) {
    EXPECT_EQ(s.tile_begin, 0);
    EXPECT_EQ(s.tile_end, 1024);
  }
  EXPECT_EQ(plan.reductions.size(), 8u);
}

TEST(PlannerProperties, EmptySequencesGetOneDirectSegment) {
  DecodeProblem p = harness::test_problem({0, 300, 0, 0}, 4, 2, 64);
  for (auto [s, order] : {std::pair{Strategy::lean, LineOrder::head_major},
                          std::pair{Strategy::lean, LineOrder::token_major},
                          std::pair{Strategy::split, LineOrder::automatic},
                          std::pair{Strategy::head, LineOrder::automatic}}) {
    for (std::int32_t workers : {1, 3, 64}) {
      const Plan plan = make_plan(p, {workers}, {.strategy = s, .order = order, .tile_tokens = 16});
      check_plan(plan);
      int empty = 0;
      for (const Segment& seg : plan.segments) {
        if (seg.tile_begin == seg.tile_end) {
          ++empty;
          EXPECT_EQ(seg.kind, SegmentKind::direct);
        }
      }
      EXPECT_EQ(empty, 6);  // 3 empty requests x 2 KV heads
    }
  }
  p.seq_lens = {0};
  const Plan all_empty = make_plan(p, {4});
  check_plan(all_empty);
  EXPECT_EQ(all_empty.total_tiles, 0);
}

TEST(PlannerProperties, WorkersBeyondTilesLeaveIdleWorkers) {
  const DecodeProblem p = harness::test_problem({3}, 1, 1, 64);
  const Plan plan = make_plan(p, {300}, {.tile_tokens = 1});
  check_plan(plan);
  int busy = 0;
  for (int w = 0; w < 300; ++w) busy += plan.worker_tiles(w) > 0;
  EXPECT_EQ(busy, 3);
  ASSERT_EQ(plan.reductions.size(), 1u);
  EXPECT_EQ(plan.reductions[0].num_slots, 3);
}

// A request's pieces in batch-invariant mode depend only on its own length.
TEST(PlannerProperties, BatchInvariantPiecesDependOnOwnLengthOnly) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const std::int32_t kv_heads = 1 + static_cast<std::int32_t>(rng() % 3);
    const std::int32_t mine = static_cast<std::int32_t>(rng() % 3000);
    std::vector<std::int32_t> lens = {mine};
    for (int b = 0; b < static_cast<int>(rng() % 6); ++b) {
      lens.push_back(static_cast<std::int32_t>(rng() % 3000));
    }
    std::shuffle(lens.begin(), lens.end(), rng);
    const auto at = std::find(lens.begin(), lens.end(), mine) - lens.begin();
    const DecodeProblem p = harness::test_problem(std::move(lens), 2 * kv_heads, kv_heads, 64);
    PlanOptions opt{.tile_tokens = 32, .batch_invariant = true, .chunk_tiles = 4};
    const Plan plan = make_plan(p, {1 + static_cast<std::int32_t>(rng() % 20)}, opt);
    check_plan(plan);
    std::vector<std::pair<std::int32_t, std::int32_t>> pieces;
    for (const Segment& s : plan.segments) {
      if (s.request == at && s.kv_head == 0) pieces.emplace_back(s.tile_begin, s.tile_end);
    }
    std::sort(pieces.begin(), pieces.end());
    const std::int32_t tiles = (mine + 31) / 32;
    std::vector<std::pair<std::int32_t, std::int32_t>> want;
    for (std::int32_t t = 0; t < tiles; t += 4) want.emplace_back(t, std::min(tiles, t + 4));
    if (tiles == 0) want.emplace_back(0, 0);
    EXPECT_EQ(pieces, want);
  }
}

}  // namespace
}  // namespace leanattn
