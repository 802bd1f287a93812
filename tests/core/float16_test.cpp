// The 16-bit conversions: every f16 and bf16 bit pattern round-trips through float, and
// float-to-16-bit rounding is round-to-nearest-even against a double-precision model.
#include "leanattn/core/float16.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace leanattn {
namespace {

TEST(Float16, EveryF16PatternRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_f16_bits(f), h) << "pattern " << h;
  }
}

TEST(Float16, EveryBf16PatternRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16_bits(f), h) << "pattern " << h;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(f16_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(f16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

// Nearest representable value by brute force over the neighbours of the truncated pattern.
TEST(Float16, RoundingIsNearestEvenOnRandomFloats) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> mag(-30.0f, 17.0f);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(1.0f, 0) * std::exp2(mag(rng)) * (i % 2 ? -1.0f : 1.0f);
    if (std::abs(f) >= 65520.0f) continue;
    const std::uint16_t got = float_to_f16_bits(f);
    const double err = std::abs(static_cast<double>(f16_bits_to_float(got)) - f);
    for (int delta : {-1, 1}) {
      const auto other = static_cast<std::uint16_t>(got + delta);
      if ((other & 0x7fff) >= 0x7c00) continue;
      if (std::signbit(f16_bits_to_float(other)) != std::signbit(f)) continue;
      const double e2 = std::abs(static_cast<double>(f16_bits_to_float(other)) - f);
      ASSERT_TRUE(err < e2 || (err == e2 && (got & 1) == 0)) << f;
    }
  }
}

}  // namespace
}  // namespace leanattn
