// The fp64 reference's attention variants against results worked out by hand on a tiny request
// (4 keys, 2 or 3 query tokens): causal rows, windows, the soft-cap, ALiBi, sinks and a
// combination; and the plan interpreter against the reference on the same cases.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

constexpr int kDim = 16;

// One request of `len` keys, one KV head and one query head, f32, scale 1/4.
harness::HostCase tiny_case(std::int32_t len, std::int32_t q_len, AttentionVariant v) {
  DecodeProblem p = harness::test_problem({len}, 1, 1, kDim, DType::f32);
  p.q_len = q_len;
  p.variant = v;
  return harness::make_case(p, 77);
}

// The hand computation: scores of row `query` over keys [b, e) with `bias(j, s)` applied, a
// sink when `sink` is finite; returns (out, lse).
struct Expected {
  std::vector<double> out;
  double lse;
};

template <class Bias>
Expected by_hand(const harness::HostCase& c, std::int32_t query, std::int64_t b, std::int64_t e,
                 Bias bias, double sink = -INFINITY) {
  const auto* q = reinterpret_cast<const float*>(c.q.data()) + query * kDim;
  const auto* k = reinterpret_cast<const float*>(c.k.data());
  const auto* v = reinterpret_cast<const float*>(c.v.data());
  std::vector<double> s;
  for (std::int64_t j = b; j < e; ++j) {
    double dot = 0;
    for (int i = 0; i < kDim; ++i) dot += static_cast<double>(q[i]) * k[j * kDim + i];
    s.push_back(bias(j, dot * 0.25));
  }
  double denom = std::exp(sink);
  for (double x : s) denom += std::exp(x);
  Expected r{std::vector<double>(kDim, 0.0), std::log(denom)};
  for (std::int64_t j = b; j < e; ++j) {
    const double w = std::exp(s[static_cast<std::size_t>(j - b)]) / denom;
    for (int i = 0; i < kDim; ++i) r.out[static_cast<std::size_t>(i)] += w * v[j * kDim + i];
  }
  return r;
}

void expect_row(const reference::Output& got, std::int32_t row, const Expected& want) {
  EXPECT_NEAR(got.lse[static_cast<std::size_t>(row)], want.lse, 1e-12) << "row " << row;
  for (int i = 0; i < kDim; ++i) {
    EXPECT_NEAR(got.out[static_cast<std::size_t>(row * kDim + i)],
                want.out[static_cast<std::size_t>(i)], 1e-12)
        << "row " << row << " dim " << i;
  }
}

// Also checks the interpreter on a plan with one-token tiles and 3 workers (split pairs).
reference::Output run_both(harness::HostCase& c) {
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const Plan plan = make_plan(c.problem, {3}, {.tile_tokens = 1});
  const auto got = reference::interpret_plan(c.problem, plan, c.tensors());
  for (std::size_t i = 0; i < ref.out.size(); ++i) EXPECT_NEAR(got.out[i], ref.out[i], 1e-12);
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      EXPECT_EQ(got.lse[i], ref.lse[i]);
    } else {
      EXPECT_NEAR(got.lse[i], ref.lse[i], 1e-12);
    }
  }
  return ref;
}

const auto kNoBias = [](std::int64_t, double s) { return s; };

TEST(VariantsReference, CausalRowsSeeUpToTheirOwnPosition) {
  harness::HostCase c = tiny_case(4, 2, {});
  const auto r = run_both(c);
  expect_row(r, 0, by_hand(c, 0, 0, 3, kNoBias));  // query 0 is at position 2
  expect_row(r, 1, by_hand(c, 1, 0, 4, kNoBias));
}

TEST(VariantsReference, NonCausalRowsSeeEveryKey) {
  harness::HostCase c = tiny_case(4, 2, {.causal = false});
  const auto r = run_both(c);
  expect_row(r, 0, by_hand(c, 0, 0, 4, kNoBias));
  expect_row(r, 1, by_hand(c, 1, 0, 4, kNoBias));
}

TEST(VariantsReference, WindowKeepsWindowLeftKeysBeforeTheQuery) {
  harness::HostCase c = tiny_case(4, 2, {.window_left = 1});
  const auto r = run_both(c);
  expect_row(r, 0, by_hand(c, 0, 1, 3, kNoBias));  // position 2: keys 1, 2
  expect_row(r, 1, by_hand(c, 1, 2, 4, kNoBias));  // position 3: keys 2, 3
  harness::HostCase zero = tiny_case(4, 2, {.window_left = 0});
  const auto z = run_both(zero);
  expect_row(z, 1, by_hand(zero, 1, 3, 4, kNoBias));  // its own key only
}

TEST(VariantsReference, SoftcapTanhOfTheScaledScore) {
  harness::HostCase c = tiny_case(4, 1, {.softcap = 0.3f});
  const auto r = run_both(c);
  const double cap = 0.3f;
  expect_row(r, 0,
             by_hand(c, 0, 0, 4, [&](std::int64_t, double s) { return cap * std::tanh(s / cap); }));
}

TEST(VariantsReference, AlibiBiasIsSlopeTimesDistance) {
  harness::HostCase c = tiny_case(4, 2, {.causal = false, .alibi = true});
  const double slope = c.alibi_slopes[0];
  const auto r = run_both(c);
  for (std::int32_t query = 0; query < 2; ++query) {
    const std::int64_t pos = 2 + query;
    expect_row(r, query, by_hand(c, query, 0, 4, [&](std::int64_t j, double s) {
                 return s - slope * std::abs(static_cast<double>(j - pos));
               }));
  }
}

TEST(VariantsReference, SinkJoinsTheDenominatorOnly) {
  harness::HostCase c = tiny_case(4, 1, {.sinks = true});
  for (float sink : {-3.0f, 0.5f, 40.0f}) {  // 40: above every score
    c.sinks[0] = sink;
    const auto r = run_both(c);
    expect_row(r, 0, by_hand(c, 0, 0, 4, kNoBias, sink));
  }
}

TEST(VariantsReference, WindowSoftcapAlibiAndSinksCombined) {
  harness::HostCase c =
      tiny_case(4, 3, {.window_left = 2, .softcap = 1.5f, .sinks = true, .alibi = true});
  const double slope = c.alibi_slopes[0], cap = 1.5f, sink = c.sinks[0];
  const auto r = run_both(c);
  for (std::int32_t query = 0; query < 3; ++query) {
    const std::int64_t pos = 1 + query;
    const std::int64_t b = std::max<std::int64_t>(0, pos - 2);
    expect_row(r, query,
               by_hand(
                   c, query, b, pos + 1,
                   [&](std::int64_t j, double s) {
                     return cap * std::tanh(s / cap) - slope * static_cast<double>(pos - j);
                   },
                   sink));
  }
}

TEST(VariantsReference, EmptyRequestGivesZerosAndMinusInfinityWithAnyVariant) {
  harness::HostCase c = tiny_case(0, 4, {.window_left = 1, .softcap = 2.0f, .sinks = true});
  const auto r = run_both(c);
  for (std::int32_t row = 0; row < 4; ++row) {
    EXPECT_EQ(r.lse[static_cast<std::size_t>(row)], -INFINITY);
    for (int i = 0; i < kDim; ++i) EXPECT_EQ(r.out[static_cast<std::size_t>(row * kDim + i)], 0.0);
  }
}

}  // namespace
}  // namespace leanattn
