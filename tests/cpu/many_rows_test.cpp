// The CPU engine's many-rows path (gemm_rows-inl.hpp: passes of many query rows shaped like a
// GEMM) against the fp64 reference, for every SIMD target: 300-row and 1-row requests side by
// side, paged, GQA, causal, windows, a random bias, soft-cap with sinks and ALiBi, every cache type
// (and K and V of different block formats), heads of an odd number of vectors, worker counts and
// tiles whose ranges cross request and head boundaries; outputs poisoned before each run. The
// threshold is set through LEANATTN_CPU_GEMM_ROWS (read when an engine is made): 1 sends every
// pass down the path, 0 none, the default only the many-row ones. Targets that run the row kernel
// (SVE, SCALAR) ignore it and must pass all the same.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cpu/tested_targets.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "harness/sanitized.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

// LEANATTN_CPU_GEMM_ROWS set for the scope (unset: the default threshold).
class GemmRowsSetting {
 public:
  explicit GemmRowsSetting(const char* value) {
    if (value == nullptr) {
      unsetenv("LEANATTN_CPU_GEMM_ROWS");
    } else {
      setenv("LEANATTN_CPU_GEMM_ROWS", value, 1);
    }
  }
  ~GemmRowsSetting() { unsetenv("LEANATTN_CPU_GEMM_ROWS"); }
  GemmRowsSetting(const GemmRowsSetting&) = delete;
  GemmRowsSetting& operator=(const GemmRowsSetting&) = delete;
};

// `lens` keys and `counts` query tokens per request (query_start_loc their prefix sums).
DecodeProblem chunked(std::vector<std::int32_t> lens, const std::vector<std::int32_t>& counts,
                      std::int32_t q_heads, std::int32_t kv_heads, std::int32_t d, DType kv,
                      AttentionVariant v = {}) {
  DecodeProblem p = harness::test_problem(std::move(lens), q_heads, kv_heads, d, DType::f16);
  p.kv_dtype = kv;
  p.kv_scales = default_kv_scales(kv);
  p.query_start_loc.assign(1, 0);
  for (std::int32_t n : counts) p.query_start_loc.push_back(p.query_start_loc.back() + n);
  p.q_len = std::max(1, *std::max_element(counts.begin(), counts.end()));
  p.variant = v;
  return p;
}

void make_paged(DecodeProblem& p, std::int32_t page_size) {
  p.layout = KvLayout::paged;
  p.page_size = page_size;
  p.capacity = 0;
}

class ManyRowsTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs c with engines of each worker count and lean plans of each tile (both orders) at the
  // threshold `rows`, each output poisoned first, against the fp64 reference.
  void check(harness::HostCase& c, const char* rows, const std::vector<std::int32_t>& workers,
             const std::vector<std::int32_t>& tiles, const std::string& what) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    const GemmRowsSetting setting(rows);
    for (std::int32_t w : workers) {
      cpu::Engine e({.workers = w, .simd = GetParam()});
      for (std::int32_t tile : tiles) {
        for (LineOrder order : {LineOrder::token_major, LineOrder::head_major}) {
          harness::poison_outputs(c);
          e.run(c.problem, e.plan(c.problem, {.order = order, .tile_tokens = tile}), c.tensors());
          const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
          ASSERT_TRUE(a.ok()) << what << " gemm rows " << rows << " workers " << w << " tile "
                              << tile << " order " << line_order_name(order) << ": err "
                              << a.max_abs_err << " tol " << a.tolerance << " lse " << a.max_lse_err
                              << " mismatches " << a.mismatches << " (" << a.first_problem << ")";
        }
      }
    }
  }
};

// Every cache type (and K and V of two block formats) with a 300-row prompt beside decode rows, a
// 20-token chunk at depth and a request of no query token, paged, GQA 6/2, window and bias.
TEST_P(ManyRowsTest, EveryCacheTypePagedWithWindowAndBias) {
  const std::vector<std::pair<DType, DType>> types = {
      {DType::f16, DType::f16},           {DType::bf16, DType::bf16},
      {DType::f32, DType::f32},           {DType::fp8_e4m3, DType::fp8_e4m3},
      {DType::fp8_e5m2, DType::fp8_e5m2}, {DType::int8, DType::int8},
      {DType::q8_0, DType::q8_0},         {DType::q4_0, DType::q4_0},
      {DType::q8_0, DType::f16},          {DType::f16, DType::q4_0}};
  std::uint64_t seed = 40;
  for (const auto& [k, v] : types) {
    DecodeProblem p = chunked({300, 700, 1, 0, 129}, {300, 1, 1, 0, 20}, 6, 2, 64, k,
                              {.window_left = 150, .bias = true});
    if (v != k) p.v_dtype = v;
    make_paged(p, 16);
    harness::HostCase c = harness::make_case(p, ++seed);
    const std::string what = kv_dtypes_name(p);
    // Under the sanitizers, three workers only (their ranges cross request and head boundaries);
    // one worker's single range runs in the release stage.
    check(c, "1", harness::kSanitized ? std::vector{3} : std::vector{1, 3}, {16, 64}, what);
    check(c, nullptr, {3}, {32}, what);
  }
}

// The variants one by one, on head widths of 1, 3 and 8 vectors of AVX-512 (16, 48, 128) and
// groups of 1, 4 and 7 rows per query token, contiguous.
TEST_P(ManyRowsTest, VariantsHeadWidthsAndGroups) {
  const std::vector<std::pair<std::string, AttentionVariant>> variants = {
      {"causal", {}},
      {"non-causal", {.causal = false}},
      {"window 40", {.window_left = 40}},
      {"bias", {.bias = true}},
      {"softcap + sinks + alibi", {.softcap = 2.0f, .sinks = true, .alibi = true}}};
  const std::vector<std::pair<std::int32_t, std::int32_t>> heads = {{4, 4}, {8, 2}, {14, 2}};
  std::uint64_t seed = 70;
  for (const auto& [name, var] : variants) {
    for (std::int32_t d : {16, 48, 128}) {
      const auto [qh, kvh] = heads[static_cast<std::size_t>(seed) % heads.size()];
      DecodeProblem p = chunked({90, 1, 260}, {37, 1, 5}, qh, kvh, d, DType::f16, var);
      harness::HostCase c = harness::make_case(p, ++seed);
      check(c, "1", {2}, {16},
            name + " d " + std::to_string(d) + " heads " + std::to_string(qh) + "/" +
                std::to_string(kvh));
    }
  }
}

// K and V of different widths (V narrower) on the path.
TEST_P(ManyRowsTest, NarrowerV) {
  DecodeProblem p = chunked({200, 64}, {64, 1}, 8, 2, 128, DType::bf16);
  p.head_dim_v = 64;
  harness::HostCase c = harness::make_case(p, 5);
  check(c, "1", {3}, {16}, "d 128 / dv 64");
}

// Decode rows stay on the tiled kernel: the default threshold gives the bits of "never".
TEST_P(ManyRowsTest, DecodeKeepsItsPath) {
  DecodeProblem p = harness::test_problem({700, 33, 1000}, 32, 8, 128, DType::f16);
  harness::HostCase a = harness::make_case(p, 9);
  harness::HostCase b = harness::make_case(p, 9);
  for (auto [rows, c] : {std::pair{"0", &a}, std::pair{static_cast<const char*>(nullptr), &b}}) {
    const GemmRowsSetting setting(rows);
    cpu::Engine e({.workers = 2, .simd = GetParam()});
    e.run(c->problem, e.plan(c->problem, {.tile_tokens = 64}), c->tensors());
  }
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size()), 0);
  EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, ManyRowsTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

TEST(ManyRowsSetting, ABadValueIsRefusedByName) {
  for (const char* bad : {"abc", "-1", "12x"}) {
    const GemmRowsSetting setting(bad);
    try {
      cpu::Engine e({.workers = 1});
      ADD_FAILURE() << "accepted LEANATTN_CPU_GEMM_ROWS=" << bad;
    } catch (const Error& err) {
      EXPECT_EQ(err.argument(), "LEANATTN_CPU_GEMM_ROWS") << err.what();
    }
  }
}

}  // namespace
}  // namespace leanattn
