// Mixed batches (DecodeProblem::query_start_loc) in the CPU engine against the fp64 reference, for
// every SIMD target and strategy: a 300-token prompt, prefill chunks and single decode rows side by
// side with requests of no query token and empty requests, contiguous and paged, GQA, causal or
// not, windows, a random per-row bias, soft-cap with sinks and ALiBi. Outputs are poisoned before
// each run. Also: counts all equal to q_len give the uniform problem's bits, and a request without
// query tokens plans no tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "cpu/engine_fixture.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/sanitized.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/core/variant_rules.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

// `lens` keys and `counts` query tokens per request (query_start_loc their prefix sums), GQA
// 8/2, d 64, f16; q_len the largest count.
DecodeProblem mixed(std::vector<std::int32_t> lens, const std::vector<std::int32_t>& counts,
                    AttentionVariant v = {}) {
  DecodeProblem p = harness::test_problem(std::move(lens), 8, 2, 64, DType::f16);
  p.query_start_loc.assign(1, 0);
  for (std::int32_t n : counts) p.query_start_loc.push_back(p.query_start_loc.back() + n);
  p.q_len = std::max(1, *std::max_element(counts.begin(), counts.end()));
  p.variant = v;
  return p;
}

class MixedBatchTest : public SimdEngineTest {
 protected:
  // Every strategy (lean in both orders) with worker counts and tiles whose ranges cross
  // request and head boundaries (`full`), or lean in both orders on two worker counts.
  // The references of case `seed` are computed once for every SIMD target's run of the suite
  // (the case's data is the seed's: make_case).
  void check_everything(harness::HostCase& c, std::uint64_t seed, const std::string& what,
                        bool full) {
    static std::map<std::uint64_t, std::pair<reference::Output, harness::NaiveBaseline>> kept;
    auto [at, fresh] = kept.try_emplace(seed);
    if (fresh) {
      at->second = {reference::naive_attention(c.problem, c.tensors()),
                    harness::naive_same_precision(c.problem, c.tensors())};
    }
    const auto& [ref, naive] = at->second;
    std::vector<PlanOptions> options = {
        {.strategy = Strategy::lean, .order = LineOrder::head_major},
        {.strategy = Strategy::lean, .order = LineOrder::token_major}};
    if (full)
      options.insert(options.end(), {{.strategy = Strategy::split}, {.strategy = Strategy::head}});
    const std::vector<std::int32_t> worker_counts =
        full ? std::vector{1, 3, 16} : std::vector{3, 16};
    const std::vector<std::int32_t> tiles = full ? std::vector{7, 64} : std::vector{16};
    for (std::int32_t workers : worker_counts) {
      for (std::int32_t tile : tiles) {
        for (PlanOptions o : options) {
          o.tile_tokens = tile;
          harness::poison_outputs(c);
          Executor& e = engine(workers);
          e.run(c.problem, e.plan(c.problem, o), c.tensors());
          const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
          ASSERT_TRUE(a.ok()) << what << " strategy " << strategy_name(o.strategy) << " order "
                              << line_order_name(o.order) << " workers " << workers << " tile "
                              << tile << ": err " << a.max_abs_err << " tol " << a.tolerance
                              << " lse " << a.max_lse_err << " mismatches " << a.mismatches << " ("
                              << a.first_problem << ")";
        }
      }
    }
  }
};

// A whole 300-token prompt, a 40-token chunk at depth, decode rows, a request with keys but no
// query token, and an empty request with and without rows.
const std::vector<std::int32_t> kLens = {300, 1000, 1, 0, 517, 77, 0};
const std::vector<std::int32_t> kCounts = {300, 1, 1, 0, 40, 0, 2};

TEST_P(MixedBatchTest, PromptChunksAndDecodeRowsEveryVariant) {
  const std::vector<std::pair<std::string, AttentionVariant>> variants = {
      {"causal", {}},
      {"non-causal", {.causal = false}},
      {"window 50", {.window_left = 50}},
      {"bias", {.bias = true}},
      {"softcap + sinks + alibi", {.softcap = 2.0f, .sinks = true, .alibi = true}}};
  std::uint64_t seed = 1;
  for (const auto& [name, v] : variants) {
    for (bool paged : {false, true}) {
      // Under the sanitizers the variants other than causal run paged only (the release stage runs
      // both layouts for each); causal keeps both layouts and the full sweep.
      ++seed;
      if (harness::kSanitized && !paged && name != "causal") continue;
      DecodeProblem p = mixed(kLens, kCounts, v);
      if (paged) {
        p.layout = KvLayout::paged;
        p.page_size = 16;
        p.capacity = 0;
      }
      harness::HostCase c = harness::make_case(p, seed);
      check_everything(c, seed, name + (paged ? " paged" : " contiguous"), name == "causal");
    }
  }
}

// A small mixed batch on every target (the Arm suite under qemu runs this one, not the above):
// a prompt, decode rows, rows of an empty request and a request of no query token, paged, with a
// random bias and a window.
TEST_P(MixedBatchTest, SmallBatchWithBiasAndWindow) {
  DecodeProblem p = mixed({40, 130, 1, 0, 64}, {40, 1, 1, 2, 0}, {.window_left = 30, .bias = true});
  p.layout = KvLayout::paged;
  p.page_size = 16;
  p.capacity = 0;
  harness::HostCase c = harness::make_case(p, 100);
  check_everything(c, 100, "small", true);
}

// Every count equal to q_len: the same problem as without query_start_loc, bit for bit.
TEST_P(MixedBatchTest, EqualCountsGiveTheUniformProblemsBits) {
  DecodeProblem uniform = harness::test_problem({90, 33, 4}, 8, 2, 64, DType::f16);
  uniform.q_len = 4;
  DecodeProblem packed = uniform;
  packed.query_start_loc = {0, 4, 8, 12};
  harness::HostCase a = harness::make_case(uniform, 7);
  harness::HostCase b = harness::make_case(packed, 7);
  ASSERT_EQ(a.q, b.q);
  Executor& e = engine(3);
  const PlanOptions o{.tile_tokens = 16};
  e.run(a.problem, e.plan(a.problem, o), a.tensors());
  e.run(b.problem, e.plan(b.problem, o), b.tensors());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size()), 0);
  EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, MixedBatchTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

TEST(MixedBatchPlan, RequestsWithoutQueryTokensPlanNoTile) {
  const DecodeProblem p = mixed(kLens, kCounts);
  const Plan plan = make_plan(p, Hardware{5}, {.tile_tokens = 16});
  std::int64_t tiles = 0;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    const std::int64_t keys = kCounts[static_cast<std::size_t>(b)] == 0 ? 0 : kLens[b];
    tiles += p.kv_heads * ((keys + 15) / 16);
    EXPECT_EQ(plan.tiles_of(b), (keys + 15) / 16) << "request " << b;
  }
  EXPECT_EQ(plan.total_tiles, tiles);
  // The interpreter of the same plan agrees with the fp64 reference.
  harness::HostCase c = harness::make_case(p, 3);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const auto got = reference::interpret_plan(c.problem, plan, c.tensors());
  ASSERT_EQ(got.out.size(), ref.out.size());
  for (std::size_t i = 0; i < ref.out.size(); ++i) EXPECT_NEAR(got.out[i], ref.out[i], 1e-9) << i;
}

// Lean cuts a mixed batch by cost (tile_cost, per tile): every worker's cost is within one cut
// unit (a tile row of every KV head token-major, a tile head-major) of the mean; by tiles, the
// 300-token prompt would load its worker alone. The costs are recomputed here from the rules.
TEST(MixedBatchPlan, LeanBalancesCostNotTiles) {
  const DecodeProblem p = mixed({4096, 4096, 4096, 4096, 0, 300}, {128, 1, 1, 0, 3, 1});
  for (LineOrder order : {LineOrder::token_major, LineOrder::head_major}) {
    for (std::int32_t workers : {2, 3, 7}) {
      const Plan plan = make_plan(p, Hardware{workers}, {.order = order, .tile_tokens = 64});
      std::vector<std::int64_t> cost(static_cast<std::size_t>(workers), 0);
      std::int64_t total = 0, unit = 0;
      for (std::int32_t w = 0; w < workers; ++w) {
        for (const Segment& s : plan.worker_segments(w)) {
          for (std::int32_t t = s.tile_begin; t < s.tile_end; ++t) {
            const KeyRange keys = plan.tile_keys(s.request, t, t + 1);
            std::int64_t pairs = 0;  // (query token, key) pairs the rows see
            for (std::int32_t j = 0; j < p.query_len(s.request); ++j) {
              const KeyRange r = visible_keys(p.seq_lens[s.request], p.query_len(s.request), j,
                                              p.variant.causal, p.variant.window_left);
              pairs += std::max<std::int64_t>(
                  0, std::min(r.end, keys.end) - std::max(r.begin, keys.begin));
            }
            const std::int64_t c = std::max((keys.end - keys.begin) * 4 * 64 * kFmasPerKvByte,
                                            p.group_size() * pairs * 128);
            cost[static_cast<std::size_t>(w)] += c;
            total += c;
            unit = std::max(unit, c);
          }
        }
      }
      if (order == LineOrder::token_major) unit *= p.kv_heads;
      for (std::int32_t w = 0; w < workers; ++w) {
        EXPECT_LE(std::abs(cost[static_cast<std::size_t>(w)] * workers - total), unit * workers)
            << line_order_name(order) << " workers " << workers << " worker " << w;
      }
    }
  }
}

TEST(MixedBatchPlan, APlanForOtherQueryCountsIsRefused) {
  const DecodeProblem p = mixed(kLens, kCounts);
  DecodeProblem other = p;
  other.query_start_loc[1] -= 1;
  const Plan plan = make_plan(p, Hardware{2}, {});
  try {
    check_plan_matches(plan, other);
    ADD_FAILURE() << "matched a plan made for other query counts";
  } catch (const Error& err) {
    EXPECT_EQ(err.argument(), "plan") << err.what();
  }
}

}  // namespace
}  // namespace leanattn
