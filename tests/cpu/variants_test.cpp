// The attention variants in the CPU engine against the fp64 reference, for every SIMD target and
// strategy: several query tokens per request (causal or not), sliding windows shorter and longer
// than the sequence and on tile edges, soft-caps near the score range, sinks above every score,
// ALiBi, a per-key bias (ggml's mask: hidden runs, hidden rows), their combinations, empty
// requests and paged caches. Outputs are poisoned before each run. Also: the planner plans only
// the tiles a window leaves visible, and a plan made for other settings is refused.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "cpu/engine_fixture.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

class VariantsTest : public SimdEngineTest {
 protected:
  // Every strategy (lean in both orders) with several worker counts and tiles.
  void check_everything(harness::HostCase& c, const std::string& what) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    const std::vector<PlanOptions> options = {
        {.strategy = Strategy::lean, .order = LineOrder::head_major},
        {.strategy = Strategy::lean, .order = LineOrder::token_major},
        {.strategy = Strategy::split},
        {.strategy = Strategy::head}};
    for (std::int32_t workers : {1, 3, 16}) {
      for (std::int32_t tile : {1, 16, 64}) {
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

DecodeProblem problem(std::vector<std::int32_t> lens, std::int32_t q_len, AttentionVariant v,
                      DType dt = DType::f16) {
  DecodeProblem p = harness::test_problem(std::move(lens), 8, 2, 64, dt);
  p.q_len = q_len;
  p.variant = v;
  return p;
}

TEST_P(VariantsTest, SeveralQueryTokensCausalAndNot) {
  for (std::int32_t q_len : {2, 4, 8}) {
    for (bool causal : {true, false}) {
      harness::HostCase c =
          harness::make_case(problem({300, 0, 8, 65, 17}, q_len, {.causal = causal}),
                             static_cast<std::uint64_t>(q_len));
      check_everything(c, "q_len " + std::to_string(q_len) + " causal " + std::to_string(causal));
    }
  }
}

TEST_P(VariantsTest, WindowsShorterLongerAndOnTileEdges) {
  for (std::int32_t window : {0, 1, 15, 16, 17, 64, 100, 5000}) {
    for (std::int32_t q_len : {1, 3}) {
      harness::HostCase c =
          harness::make_case(problem({700, 0, 64, 65, 3}, q_len, {.window_left = window}),
                             static_cast<std::uint64_t>(window));
      check_everything(c, "window " + std::to_string(window) + " q_len " + std::to_string(q_len));
    }
  }
}

TEST_P(VariantsTest, SoftcapSinksAlibiAndCombinations) {
  const std::vector<std::pair<std::string, AttentionVariant>> variants = {
      {"softcap near the scores", {.softcap = 1.0f}},
      {"softcap 30", {.softcap = 30.0f}},
      {"sinks", {.sinks = true}},
      {"alibi", {.alibi = true}},
      {"gemma2: window + softcap", {.window_left = 40, .softcap = 2.0f}},
      {"gpt-oss: window + sinks", {.window_left = 40, .sinks = true}},
      {"everything", {.window_left = 33, .softcap = 2.5f, .sinks = true, .alibi = true}},
      {"non-causal alibi", {.causal = false, .alibi = true}}};
  for (const auto& [name, v] : variants) {
    harness::HostCase c = harness::make_case(problem({200, 0, 5, 129}, 4, v, DType::bf16), 9);
    check_everything(c, name);
  }
}

TEST_P(VariantsTest, SinksAboveEveryScoreAndPagedCaches) {
  DecodeProblem p = problem({300, 7, 0, 64}, 2, {.window_left = 20, .sinks = true});
  p.layout = KvLayout::paged;
  p.page_size = 16;
  harness::HostCase c = harness::make_case(p, 21);
  for (float& s : c.sinks) s = 60.0f;  // far above every score: outputs tiny, finite, exact
  check_everything(c, "paged, sinks 60");
}

// A per-key bias (ggml's mask): random values with runs of -inf and 0, one row in 16 hidden
// whole, per head or shared by the heads (odd seeds), in every bias dtype, with the other
// variants and a paged cache.
TEST_P(VariantsTest, BiasWithHiddenRunsEveryDtypeAndCombination) {
  const std::vector<std::pair<std::string, AttentionVariant>> variants = {
      {"bias", {.bias = true}},
      {"bias, non-causal", {.causal = false, .bias = true}},
      {"bias + window + softcap", {.window_left = 40, .softcap = 2.0f, .bias = true}},
      {"bias + sinks + alibi", {.sinks = true, .alibi = true, .bias = true}}};
  std::uint64_t seed = 30;
  for (const auto& [name, v] : variants) {
    for (DType bias_dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (std::int32_t q_len : {1, 3}) {
        DecodeProblem p = problem({200, 0, 5, 129}, q_len, v, DType::f32);
        p.bias_dtype = bias_dtype;
        if (seed % 3 == 0) {
          p.layout = KvLayout::paged;
          p.page_size = 16;
        }
        harness::HostCase c = harness::make_case(p, seed++);
        check_everything(c, name + " " + std::string(dtype_name(bias_dtype)) + " q_len " +
                                std::to_string(q_len) + " seed " + std::to_string(seed - 1));
      }
    }
  }
}

// Rows whose every key the bias hides: output 0 and lse -inf, as an empty request, with and
// without sinks, while the request's other rows and requests are computed.
TEST_P(VariantsTest, BiasHidingEveryKeyOfARowGivesZeros) {
  for (bool sinks : {false, true}) {
    DecodeProblem p = problem({150, 40}, 2, {.sinks = sinks, .bias = true}, DType::f32);
    harness::HostCase c = harness::make_case(p, 8);  // even: one bias row per head
    auto* bias = reinterpret_cast<float*>(c.bias.data());
    const float inf = std::numeric_limits<float>::infinity();
    // Request 0, query 1, head 3; request 1, query 0, every head.
    std::fill_n(bias + c.bias_stride_token + 3 * c.bias_stride_head, 150, -inf);
    for (std::int32_t h = 0; h < p.q_heads; ++h) {
      std::fill_n(bias + c.bias_stride_batch + h * c.bias_stride_head, 150, -inf);
    }
    check_everything(c, sinks ? "hidden rows, sinks" : "hidden rows");
    const std::size_t row = (static_cast<std::size_t>(0) * p.q_len + 1) * p.q_heads + 3;
    const std::vector<double> out = harness::read_output(c);
    for (std::int32_t i = 0; i < p.head_dim; ++i) EXPECT_EQ(out[row * p.head_dim + i], 0.0);
    EXPECT_EQ(c.lse[row], -inf);
    EXPECT_EQ(c.lse[static_cast<std::size_t>(p.q_len) * p.q_heads + 5], -inf);
  }
}

TEST(VariantsBias, BadBiasArgumentsAreRefusedByName) {
  DecodeProblem p = problem({30, 10}, 1, {.bias = true}, DType::f32);
  p.bias_dtype = DType::f16;
  harness::HostCase c = harness::make_case(p, 2);
  cpu::Engine e({.workers = 2});
  const Plan plan = e.plan(c.problem);
  auto refused = [&](DecodeTensors t, const std::string& argument) {
    try {
      e.run(c.problem, plan, t);
      ADD_FAILURE() << "ran with a bad " << argument;
    } catch (const Error& err) {
      EXPECT_EQ(err.argument(), argument) << err.what();
    }
  };
  DecodeTensors t = c.tensors();
  t.bias_stride_token = -1;
  refused(t, "bias_stride_token");
  t = c.tensors();
  t.bias = static_cast<const std::byte*>(t.bias) + 1;
  refused(t, "bias");
  t = c.tensors();
  t.bias = nullptr;
  refused(t, "bias");
  DecodeProblem plain = c.problem;
  plain.variant.bias = false;
  try {
    e.run(plain, e.plan(plain), c.tensors());
    ADD_FAILURE() << "ran with a bias the variant does not use";
  } catch (const Error& err) {
    EXPECT_EQ(err.argument(), "bias") << err.what();
  }
}

TEST_P(VariantsTest, RandomVariantProblems) {
  std::mt19937_64 rng(1616);
  harness::RandomLimits lim;
  lim.max_len = 500;
  lim.max_workers = 64;
  for (int trial = 0; trial < 120; ++trial) {
    harness::RandomCase rc = harness::random_case(rng, lim);
    harness::HostCase c =
        harness::make_case(rc.problem, static_cast<std::uint64_t>(trial) + 7000, rc.shared_kv);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    Executor& e = engine(rc.hardware.workers);
    e.run(c.problem, make_plan(c.problem, rc.hardware, rc.options), c.tensors());
    const harness::Accuracy a = harness::check_accuracy(c, ref, true);
    ASSERT_TRUE(a.ok()) << "trial " << trial << " err " << a.max_abs_err << " tol " << a.tolerance
                        << " lse " << a.max_lse_err << " (" << a.first_problem << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, VariantsTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

TEST(VariantsPlan, WindowPlansOnlyTheVisibleTiles) {
  // 128k keys, window 4096, 4 query tokens: keys [seq - 4 - 4096, seq) are planned.
  DecodeProblem p = problem({131072, 5000, 100}, 4, {.window_left = 4096});
  p.capacity = 131072;
  const Plan plan = make_plan(p, {8}, {.tile_tokens = 64});
  EXPECT_EQ(plan.first_key(0), 131072 - 4 - 4096);
  EXPECT_EQ(plan.first_key(1), 5000 - 4 - 4096);
  EXPECT_EQ(plan.first_key(2), 0);
  const std::int64_t tiles = (4100 + 63) / 64 + (4100 + 63) / 64 + (100 + 63) / 64;
  EXPECT_EQ(plan.total_tiles, tiles * p.kv_heads);
  // Lean balances the planned tiles: no worker holds more than its share plus one.
  for (std::int32_t w = 0; w < plan.workers; ++w) {
    EXPECT_LE(plan.worker_tiles(w), plan.total_tiles / plan.workers + 1);
  }
}

TEST(VariantsPlan, APlanMadeForOtherSettingsIsRefused) {
  DecodeProblem p = problem({100, 50}, 2, {.window_left = 10});
  harness::HostCase c = harness::make_case(p, 3);
  cpu::Engine e({.workers = 2});
  const Plan plan = e.plan(c.problem);
  for (auto change :
       std::vector<void (*)(DecodeProblem&)>{[](DecodeProblem& q) { q.variant.window_left = 11; },
                                             [](DecodeProblem& q) { q.variant.causal = false; },
                                             [](DecodeProblem& q) { q.variant.softcap = 1.0f; },
                                             [](DecodeProblem& q) { q.q_len = 1; }}) {
    harness::HostCase other = harness::make_case(p, 3);
    change(other.problem);
    try {
      e.run(other.problem, plan, other.tensors());
      ADD_FAILURE() << "ran a plan made for other settings";
    } catch (const Error& err) {
      EXPECT_EQ(err.argument(), "plan") << err.what();
    }
  }
}

}  // namespace
}  // namespace leanattn
