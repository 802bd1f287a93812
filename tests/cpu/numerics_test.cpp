// The numerics rules (docs/numerics.md), on every SIMD target and every strategy: NaN in Q, K or
// V reaches exactly the outputs the reference says it reaches; scores of magnitude ~1e4 do not
// overflow; empty sequences give zeros and LSE = -inf; f16 inputs near the f16 maximum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "cpu/tested_targets.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

class NumericsTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs every strategy with 3 workers and a small tile (pieces cross workers) and checks the
  // output against the reference, NaN placement included.
  void expect_matches_reference(harness::HostCase& c, const std::string& what) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    cpu::Engine engine({.workers = 3, .simd = GetParam()});
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      harness::poison_outputs(c);
      engine.run(c.problem, engine.plan(c.problem, {.strategy = s, .tile_tokens = 8}), c.tensors());
      const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
      EXPECT_TRUE(a.ok()) << what << ", " << strategy_name(s) << ": err " << a.max_abs_err
                          << " tol " << a.tolerance << ", mismatches " << a.mismatches << " ("
                          << a.first_problem << ")";
    }
  }
};

DecodeProblem small_problem(DType dt) {
  return harness::test_problem({50, 41, 0}, 6, 2, 32, dt);
}

void set_element(std::span<std::byte> buf, DType dt, std::int64_t i, float value) {
  if (dt == DType::f32) {
    std::memcpy(buf.data() + i * 4, &value, 4);
    return;
  }
  const std::uint16_t h = dt == DType::f16 ? float_to_f16_bits(value) : float_to_bf16_bits(value);
  std::memcpy(buf.data() + i * 2, &h, 2);
}

TEST_P(NumericsTest, NaNInQueryPoisonsOnlyItsRow) {
  for (DType dt : {DType::f32, DType::bf16}) {
    harness::HostCase c = harness::make_case(small_problem(dt), 1);
    set_element(c.q, dt, (1 * 6 + 4) * 32 + 5, std::nanf(""));  // request 1, q head 4
    expect_matches_reference(c, "NaN in q");
    const auto out = harness::read_output(c);
    EXPECT_TRUE(std::isnan(out[(1 * 6 + 4) * 32]));
    EXPECT_FALSE(std::isnan(out[(1 * 6 + 3) * 32]));  // same KV head, other query head
  }
}

TEST_P(NumericsTest, NaNInKeyPoisonsItsGroupOnly) {
  for (DType dt : {DType::f32, DType::f16}) {
    harness::HostCase c = harness::make_case(small_problem(dt), 2);
    const std::int64_t row = c.problem.kv_heads * 32;
    set_element(c.k, dt, (0 * c.problem.capacity + 17) * row + 1 * 32 + 3, std::nanf(""));
    expect_matches_reference(c, "NaN in k");
  }
}

TEST_P(NumericsTest, NaNInValuePoisonsOneDimensionOfItsGroup) {
  harness::HostCase c = harness::make_case(small_problem(DType::f32), 3);
  const std::int64_t row = c.problem.kv_heads * 32;
  set_element(c.v, DType::f32, (1 * c.problem.capacity + 40) * row + 0 * 32 + 9, std::nanf(""));
  expect_matches_reference(c, "NaN in v");
  const auto out = harness::read_output(c);
  EXPECT_TRUE(std::isnan(out[(1 * 6 + 0) * 32 + 9]));
  EXPECT_FALSE(std::isnan(out[(1 * 6 + 0) * 32 + 8]));
}

TEST_P(NumericsTest, ScoresOfMagnitudeTenThousandDoNotOverflow) {
  harness::HostCase c = harness::make_case(small_problem(DType::f32), 4);
  auto* q = reinterpret_cast<float*>(c.q.data());
  auto* k = reinterpret_cast<float*>(c.k.data());
  for (std::size_t i = 0; i < c.q.size() / 4; ++i) q[i] *= 100.0f;
  for (std::size_t i = 0; i < c.k.size() / 4; ++i) k[i] *= 100.0f;
  expect_matches_reference(c, "|s| ~ 1e4");
  for (float x : c.lse) {
    if (!std::isinf(x)) {
      EXPECT_TRUE(std::isfinite(x));
    }
  }
}

TEST_P(NumericsTest, EmptySequencesGiveZerosAndMinusInfinity) {
  harness::HostCase c = harness::make_case(small_problem(DType::f16), 5);
  cpu::Engine engine({.workers = 2, .simd = GetParam()});
  engine.decode(c.problem, c.tensors());
  for (std::int64_t i = 2 * 6 * 32; i < 3 * 6 * 32; ++i) {
    std::uint16_t h;
    std::memcpy(&h, c.out.data() + i * 2, 2);
    EXPECT_EQ(h, 0u) << i;
  }
  for (int h = 0; h < 6; ++h) EXPECT_EQ(c.lse[2 * 6 + h], -std::numeric_limits<float>::infinity());
}

TEST_P(NumericsTest, F16InputsNearTheF16Maximum) {
  harness::HostCase c = harness::make_case(small_problem(DType::f16), 6);
  // Q and K near +-60000: scores reach 1e10 and more; V near +-60000: outputs near the f16 limit.
  auto scale_all = [](std::span<std::byte> buf, float factor) {
    for (std::size_t i = 0; i < buf.size() / 2; ++i) {
      std::uint16_t h;
      std::memcpy(&h, buf.data() + i * 2, 2);
      const float f = std::clamp(f16_bits_to_float(h) * factor, -65000.0f, 65000.0f);
      h = float_to_f16_bits(f);
      std::memcpy(buf.data() + i * 2, &h, 2);
    }
  };
  scale_all(c.q, 30000.0f);
  scale_all(c.k, 30000.0f);
  scale_all(c.v, 30000.0f);
  expect_matches_reference(c, "f16 near max");
  const auto out = harness::read_output(c);
  for (double x : out) EXPECT_FALSE(std::isinf(x));
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, NumericsTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

}  // namespace
}  // namespace leanattn
