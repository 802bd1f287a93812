// The fp64 reference against results worked out by hand, and layout independence: the same
// values stored contiguous and paged give the same output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

TEST(NaiveAttention, OneTokenReturnsItsValueAndScore) {
  harness::HostCase c = harness::make_case(harness::test_problem({1}, 2, 1, 16, DType::f32), 11);
  const auto r = reference::naive_attention(c.problem, c.tensors());
  const auto* q = reinterpret_cast<const float*>(c.q.data());
  const auto* k = reinterpret_cast<const float*>(c.k.data());
  const auto* v = reinterpret_cast<const float*>(c.v.data());
  for (int h = 0; h < 2; ++h) {
    double dot = 0;
    for (int i = 0; i < 16; ++i) dot += static_cast<double>(q[h * 16 + i]) * k[i];
    EXPECT_NEAR(r.lse[h], dot / 4.0, 1e-12);  // scale 1/sqrt(16)
    for (int i = 0; i < 16; ++i) EXPECT_EQ(r.out[h * 16 + i], static_cast<double>(v[i]));
  }
}

TEST(NaiveAttention, TwoTokensMatchTheClosedForm) {
  harness::HostCase c = harness::make_case(harness::test_problem({2}, 1, 1, 16, DType::f32), 12);
  c.problem.scale = 0.5f;
  const auto r = reference::naive_attention(c.problem, c.tensors());
  const auto* q = reinterpret_cast<const float*>(c.q.data());
  const auto* k = reinterpret_cast<const float*>(c.k.data());
  const auto* v = reinterpret_cast<const float*>(c.v.data());
  double s[2] = {0, 0};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 16; ++i) s[j] += static_cast<double>(q[i]) * k[j * 16 + i];
    s[j] *= 0.5;
  }
  const double w0 = 1.0 / (1.0 + std::exp(s[1] - s[0]));
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(r.out[i], w0 * v[i] + (1 - w0) * v[16 + i], 1e-12);
  }
  EXPECT_NEAR(r.lse[0], std::log(std::exp(s[0]) + std::exp(s[1])), 1e-12);
}

TEST(NaiveAttention, EmptySequenceGivesZerosAndMinusInfinity) {
  harness::HostCase c = harness::make_case(harness::test_problem({0, 3}, 2, 2, 16, DType::f32), 13);
  const auto r = reference::naive_attention(c.problem, c.tensors());
  for (int i = 0; i < 2 * 16; ++i) EXPECT_EQ(r.out[i], 0.0);
  EXPECT_EQ(r.lse[0], -INFINITY);
  EXPECT_EQ(r.lse[1], -INFINITY);
  EXPECT_TRUE(std::isfinite(r.lse[2]));
}

TEST(NaiveAttention, PagedAndContiguousLayoutsAgree) {
  DecodeProblem p = harness::test_problem({7, 0, 12}, 4, 2, 32, DType::f32);
  harness::HostCase flat = harness::make_case(p, 14);
  p.layout = KvLayout::paged;
  p.page_size = 3;
  harness::HostCase paged = harness::make_case(p, 15);
  // Copy the contiguous K/V rows into their pages and use the same queries.
  paged.q = flat.q;
  const std::int64_t row = 2 * 32;
  for (std::int32_t b = 0; b < 3; ++b) {
    for (std::int32_t t = 0; t < p.seq_lens[b]; ++t) {
      const std::int32_t page =
          paged.block_table[static_cast<std::size_t>(b * paged.problem.max_pages + t / 3)];
      const std::int64_t dst = (page * 3 + t % 3) * row * 4;
      const std::int64_t src = (b * flat.problem.capacity + t) * row * 4;
      std::memcpy(paged.k.data() + dst, flat.k.data() + src, static_cast<std::size_t>(row * 4));
      std::memcpy(paged.v.data() + dst, flat.v.data() + src, static_cast<std::size_t>(row * 4));
    }
  }
  const auto a = reference::naive_attention(flat.problem, flat.tensors());
  const auto b = reference::naive_attention(paged.problem, paged.tensors());
  EXPECT_EQ(a.out, b.out);
  for (std::size_t i = 0; i < a.lse.size(); ++i) {
    EXPECT_TRUE(a.lse[i] == b.lse[i]) << i;
  }
}

}  // namespace
}  // namespace leanattn
