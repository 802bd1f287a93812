// K and V of different widths on the CPU engine, every SIMD target, against the fp64 reference:
// DeepSeek's K 192 / V 128 (own V cache), narrower V of every kind, and absorbed MLA (one KV head,
// K 576 / V 512, V the first 512 values of K's rows: no V cache) with 16 and 128 query heads in
// 16-bit, 8-bit and q8_0 caches, contiguous and paged. Outputs poisoned first; workers and tiles
// swept so that ranges cross head and request boundaries; lengths include 0, 1 and odd ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/engine_fixture.hpp"
#include "cpu/segment_kernel.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn {
namespace {

class ValueWidthsTest : public SimdEngineTest {
 protected:
  // Runs lean, split and head with each worker count and tile on `c` and checks every output.
  void check(harness::HostCase& c, const std::vector<std::int32_t>& workers,
             const std::vector<std::int32_t>& tiles, const std::string& what) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    for (std::int32_t w : workers) {
      for (std::int32_t tile : tiles) {
        for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
          harness::poison_outputs(c);
          Executor& e = engine(w);
          e.run(c.problem, e.plan(c.problem, {.strategy = s, .tile_tokens = tile}), c.tensors());
          const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
          ASSERT_TRUE(a.ok()) << what << " " << strategy_name(s) << " workers " << w << " tile "
                              << tile << ": err " << a.max_abs_err << " > tol " << a.tolerance
                              << ", lse err " << a.max_lse_err << " (" << a.first_problem << ")";
        }
      }
    }
  }
};

TEST_P(ValueWidthsTest, NarrowerVOfItsOwnOrInKsRows) {
  struct Widths {
    std::int32_t d, dv;
  };
  for (const Widths w : {Widths{192, 128}, Widths{64, 32}, Widths{128, 16}, Widths{256, 240},
                         Widths{48, 16}, Widths{576, 512}}) {
    for (std::int32_t group : {1, 3, 8}) {
      for (const bool shared : {false, true}) {
        DecodeProblem p = harness::test_problem({97, 0, 1, 40}, 2 * group, 2, w.d, DType::bf16);
        p.head_dim_v = w.dv;
        harness::HostCase c =
            harness::make_case(p, static_cast<std::uint64_t>(w.d * 1000 + w.dv + group), shared);
        ASSERT_EQ(shares_kv(c.tensors()), shared);
        check(c, {1, 3}, {16, 0},
              "d " + std::to_string(w.d) + "/" + std::to_string(w.dv) + " group " +
                  std::to_string(group) + (shared ? " shared" : ""));
      }
    }
  }
}

TEST_P(ValueWidthsTest, AbsorbedMlaOneLatentCache) {
  // kv_dtype, q_dtype, query heads, paged page size (0: contiguous)
  struct Case {
    DType kv, q;
    std::int32_t heads, page;
  };
  for (const Case k :
       {Case{DType::bf16, DType::bf16, 16, 0}, Case{DType::f16, DType::f16, 128, 64},
        Case{DType::fp8_e4m3, DType::bf16, 16, 0}, Case{DType::int8, DType::f16, 16, 16},
        Case{DType::q8_0, DType::f16, 16, 0}, Case{DType::f32, DType::f32, 16, 1}}) {
    DecodeProblem p = harness::test_problem({300, 0, 65, 1}, k.heads, 1, 576, k.q);
    p.head_dim_v = 512;
    p.kv_dtype = k.kv;
    p.kv_scales = default_kv_scales(k.kv);
    if (k.page > 0) {
      p.layout = KvLayout::paged;
      p.page_size = k.page;
    }
    harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(k.heads + k.page), true);
    const std::string what = std::string(dtype_name(k.kv)) + " " + std::to_string(k.heads) +
                             " heads page " + std::to_string(k.page);
    check(c, k.heads == 128 ? std::vector<std::int32_t>{2} : std::vector<std::int32_t>{1, 2, 5},
          {0, 32}, what);
  }
}

TEST_P(ValueWidthsTest, VFromKsRowsEqualsACopiedVCache) {
  // The same values read from K's rows and from a V cache of their own give the same bits.
  DecodeProblem p = harness::test_problem({200, 31}, 16, 1, 576, DType::bf16);
  p.head_dim_v = 512;
  harness::HostCase shared = harness::make_case(p, 9, true);
  harness::HostCase own = harness::make_case(p, 9, false);
  own.k = shared.k;
  const std::size_t row = 576 * 2, vrow = 512 * 2;
  for (std::size_t r = 0; r < own.v.size() / vrow; ++r) {
    std::memcpy(own.v.data() + r * vrow, shared.k.data() + r * row, vrow);
  }
  Executor& e = engine(2);
  const Plan plan = e.plan(p, {.tile_tokens = 16});
  e.run(shared.problem, plan, shared.tensors());
  e.run(own.problem, plan, own.tensors());
  EXPECT_EQ(shared.out, own.out);
  EXPECT_EQ(shared.lse, own.lse);
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, ValueWidthsTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

TEST(ValueWidths, ProblemRulesNameHeadDimV) {
  DecodeProblem p = harness::test_problem({10}, 4, 1, 64);
  p.head_dim_v = 80;
  EXPECT_THROW(
      try { validate(p); } catch (const Error& e) {
        EXPECT_EQ(e.argument(), "head_dim_v");
        throw;
      },
      Error);
  p.head_dim = 576;
  p.head_dim_v = 512;
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(p.value_dim(), 512);
  // Bytes read: K's 576 and V's 512 values per token, or K's alone from one latent cache.
  EXPECT_EQ(p.kv_bytes(), 10 * (576 + 512) * 2);
  EXPECT_EQ(p.kv_bytes(true), 10 * 576 * 2);
  p.head_dim = 592;
  EXPECT_THROW(validate(p), Error);
}

}  // namespace
}  // namespace leanattn
