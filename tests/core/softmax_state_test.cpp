// The softmax-state rules: empty state, merge identity, associativity of merge, the online update
// against a two-pass softmax, -inf and NaN rules, very large scores.
#include "leanattn/core/softmax_state.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace leanattn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A state built from scores s and scalar values v (dim 1) with the online update, in blocks.
struct Built {
  SoftmaxStats<double> st = empty_stats<double>();
  double o = 0.0;
};

Built build(const std::vector<double>& s, const std::vector<double>& v, std::size_t block) {
  Built b;
  std::vector<double> p(block);
  for (std::size_t i = 0; i < s.size(); i += block) {
    const std::size_t n = std::min(block, s.size() - i);
    const double r = update_with_block(b.st, &s[i], p.data(), static_cast<int>(n));
    b.o *= r;
    for (std::size_t j = 0; j < n; ++j) b.o += p[j] * v[i + j];
  }
  return b;
}

TEST(SoftmaxState, EmptyStateFinalizesToZeroAndMinusInfinity) {
  const auto st = empty_stats<double>();
  EXPECT_EQ(st.m, -kInf);
  EXPECT_EQ(st.l, 0.0);
  const auto f = finalize(st);
  EXPECT_EQ(f.inv_l, 0.0);
  EXPECT_EQ(f.lse, -kInf);
}

TEST(SoftmaxState, MergeWithEmptyIsBitwiseIdentityOnBothSides) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> n(0.0, 3.0);
  for (int trial = 0; trial < 100; ++trial) {
    SoftmaxStats<double> a{n(rng), std::abs(n(rng)) + 0.1};
    double o[3] = {n(rng), n(rng), n(rng)};
    const double o_copy[3] = {o[0], o[1], o[2]};
    const double empty_o[3] = {0, 0, 0};
    SoftmaxStats<double> left = a;
    merge_into(left, o, empty_stats<double>(), empty_o, 3);
    EXPECT_EQ(left.m, a.m);
    EXPECT_EQ(left.l, a.l);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(o[i], o_copy[i]);
    SoftmaxStats<double> right = empty_stats<double>();
    double r[3] = {0, 0, 0};
    merge_into(right, r, a, o_copy, 3);
    EXPECT_EQ(right.m, a.m);
    EXPECT_EQ(right.l, a.l);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r[i], o_copy[i]);
  }
}

TEST(SoftmaxState, TwoEmptyStatesMergeToEmptyWithoutNaN) {
  SoftmaxStats<float> a = empty_stats<float>();
  float o[2] = {0, 0};
  const float ob[2] = {0, 0};
  merge_into(a, o, empty_stats<float>(), ob, 2);
  EXPECT_EQ(a.m, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(a.l, 0.0f);
  EXPECT_FALSE(std::isnan(o[0]) || std::isnan(o[1]));
  const auto f = finalize(a);
  EXPECT_EQ(f.inv_l, 0.0f);
  EXPECT_EQ(f.lse, -std::numeric_limits<float>::infinity());
}

TEST(SoftmaxState, BlockOfMinusInfinityScoresKeepsStateEmpty) {
  SoftmaxStats<double> st = empty_stats<double>();
  const double s[3] = {-kInf, -kInf, -kInf};
  double p[3];
  const double r = update_with_block(st, s, p, 3);
  EXPECT_FALSE(std::isnan(r));
  EXPECT_EQ(st.m, -kInf);
  EXPECT_EQ(st.l, 0.0);
  for (double x : p) EXPECT_EQ(x, 0.0);
}

TEST(SoftmaxState, OnlineUpdateMatchesTwoPassSoftmaxForAnyBlockSize) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> n(0.0, 4.0);
  for (std::size_t len : {1u, 2u, 7u, 64u, 97u}) {
    std::vector<double> s(len), v(len);
    for (auto& x : s) x = n(rng);
    for (auto& x : v) x = n(rng);
    double m = -kInf;
    for (double x : s) m = std::max(m, x);
    double l = 0.0, o = 0.0;
    for (std::size_t j = 0; j < len; ++j) {
      l += std::exp(s[j] - m);
      o += std::exp(s[j] - m) * v[j];
    }
    for (std::size_t block : {1u, 3u, 16u, 128u}) {
      const Built b = build(s, v, block);
      const auto f = finalize(b.st);
      EXPECT_NEAR(b.o * f.inv_l, o / l, 1e-12) << "len " << len << " block " << block;
      EXPECT_NEAR(f.lse, m + std::log(l), 1e-12);
    }
  }
}

TEST(SoftmaxState, MergeOfAnyPartitionEqualsTheWholeAndIsAssociative) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0.0, 5.0);
  std::vector<double> s(50), v(50);
  for (auto& x : s) x = n(rng);
  for (auto& x : v) x = n(rng);
  const Built whole = build(s, v, 50);
  for (int trial = 0; trial < 50; ++trial) {
    std::size_t c1 = std::uniform_int_distribution<std::size_t>(0, 50)(rng);
    std::size_t c2 = std::uniform_int_distribution<std::size_t>(c1, 50)(rng);
    auto part = [&](std::size_t b, std::size_t e) {
      return build(std::vector<double>(s.begin() + b, s.begin() + e),
                   std::vector<double>(v.begin() + b, v.begin() + e), 4);
    };
    Built a = part(0, c1), b = part(c1, c2), c = part(c2, 50);
    // (a + b) + c
    Built left = a;
    merge_into(left.st, &left.o, b.st, &b.o, 1);
    merge_into(left.st, &left.o, c.st, &c.o, 1);
    // a + (b + c)
    Built right = b;
    merge_into(right.st, &right.o, c.st, &c.o, 1);
    Built r2 = a;
    merge_into(r2.st, &r2.o, right.st, &right.o, 1);
    const double want = whole.o / whole.st.l;
    EXPECT_NEAR(left.o * finalize(left.st).inv_l, want, 1e-12);
    EXPECT_NEAR(r2.o * finalize(r2.st).inv_l, want, 1e-12);
    EXPECT_NEAR(finalize(left.st).lse, finalize(whole.st).lse, 1e-12);
  }
}

TEST(SoftmaxState, NaNScorePoisonsItsRowOnly) {
  const std::vector<double> s = {0.5, std::nan(""), 1.0};
  const std::vector<double> v = {1.0, 2.0, 3.0};
  const Built b = build(s, v, 2);
  const auto f = finalize(b.st);
  EXPECT_TRUE(std::isnan(b.o * f.inv_l));
  EXPECT_TRUE(std::isnan(f.lse));
  // Merging a NaN state into a clean one poisons the merged result.
  Built clean = build({0.1, 0.2}, {1.0, 1.0}, 2);
  merge_into(clean.st, &clean.o, b.st, &b.o, 1);
  EXPECT_TRUE(std::isnan(clean.o * finalize(clean.st).inv_l));
}

TEST(SoftmaxState, VeryLargeScoresDoNotOverflowInFloat) {
  std::vector<float> s = {1e4f, -1e4f, 9999.0f, 1e4f};
  SoftmaxStats<float> st = empty_stats<float>();
  std::vector<float> p(4);
  update_with_block(st, s.data(), p.data(), 4);
  const auto f = finalize(st);
  EXPECT_TRUE(std::isfinite(f.lse));
  EXPECT_NEAR(f.lse, 1e4 + std::log(2.0 + std::exp(-1.0)), 1e-2);
  EXPECT_TRUE(std::isfinite(f.inv_l));
}

}  // namespace
}  // namespace leanattn
