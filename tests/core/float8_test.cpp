// The 8-bit conversions of quantized KV caches: the host decoders (core/float8.hpp, through the
// half format as the SIMD loaders do) agree with the reference's literal decode of the format
// definitions on all 256 patterns of E4M3FN and E5M2, every finite pattern round-trips through the
// encoders, and encoding rounds to nearest even and saturates.
#include "leanattn/core/float8.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "reference/read_element.hpp"

namespace leanattn {
namespace {

double literal(DType type, std::uint8_t bits) {
  const std::uint8_t buffer[4] = {bits, 0, 0, 0};  // as large as any element read_element knows
  return reference::read_element(buffer, type, 0);
}

TEST(Float8, DecodersAgreeWithTheLiteralDefinitionOnEveryPattern) {
  for (int b = 0; b < 256; ++b) {
    const auto bits = static_cast<std::uint8_t>(b);
    for (auto [type, value] : {std::pair{DType::fp8_e4m3, e4m3_bits_to_float(bits)},
                               std::pair{DType::fp8_e5m2, e5m2_bits_to_float(bits)}}) {
      const double want = literal(type, bits);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(value)) << dtype_name(type) << " " << b;
      } else {
        EXPECT_EQ(static_cast<double>(value), want) << dtype_name(type) << " " << b;
      }
    }
    EXPECT_EQ(literal(DType::int8, bits), static_cast<std::int8_t>(bits));
  }
}

TEST(Float8, EveryFinitePatternRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const auto bits = static_cast<std::uint8_t>(b);
    const float e4 = e4m3_bits_to_float(bits);
    if (!std::isnan(e4)) {
      EXPECT_EQ(float_to_e4m3_bits(e4), bits) << "e4m3 " << b;
    }
    const float e5 = e5m2_bits_to_float(bits);
    if (std::isfinite(e5)) {
      EXPECT_EQ(float_to_e5m2_bits(e5), bits) << "e5m2 " << b;
    }
  }
}

TEST(Float8, KnownValuesRoundingAndSaturation) {
  EXPECT_EQ(e4m3_bits_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xff)));
  EXPECT_EQ(e5m2_bits_to_float(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(e5m2_bits_to_float(0x7c)));
  EXPECT_EQ(float_to_e4m3_bits(1000.0f), 0x7e);  // saturates
  EXPECT_EQ(float_to_e4m3_bits(-1e30f), 0xfe);
  EXPECT_EQ(float_to_e5m2_bits(1e30f), 0x7b);
  EXPECT_EQ(float_to_e4m3_bits(1.0625f), 0x38);  // tie between 1 and 1.125: to even (1)
  EXPECT_EQ(float_to_e4m3_bits(1.1875f), 0x3a);  // tie between 1.125 and 1.25: to even (1.25)
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.5f, -10)), 0x01);  // 0.75 quanta -> 1
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -10)), 0x00);  // 0.5 quanta: tie to even (0)
  EXPECT_EQ(float_to_e4m3_bits(-0.0f), 0x80);
  EXPECT_EQ(float_to_int8(126.5f), 126);  // tie to even
  EXPECT_EQ(float_to_int8(300.0f), 127);
  EXPECT_EQ(float_to_int8(-300.0f), -127);
}

}  // namespace
// The packed pair rule of the CUDA kernel's sm_80 conversion: every pair of bytes gives the two
// halves of the scalar rule (the NaN pattern aside: +-480 / 2^8 there).
TEST(Float8, PackedE4m3PairRuleMatchesTheScalarOne) {
  for (std::uint32_t lo = 0; lo < 256; ++lo) {
    for (std::uint32_t hi = 0; hi < 256; ++hi) {
      const std::uint32_t h = e4m3x2_to_f16x2_bits_over_256(lo | (hi << 16));
      const std::uint32_t bytes[2] = {lo, hi};
      for (int i = 0; i < 2; ++i) {
        const auto half = static_cast<std::uint16_t>(h >> (16 * i));
        const auto b = static_cast<std::uint8_t>(bytes[i]);
        if ((b & 0x7fu) == 0x7fu) {
          ASSERT_EQ(f16_bits_to_float(half) * 256.0f, (b & 0x80u) ? -480.0f : 480.0f);
        } else {
          ASSERT_EQ(half, e4m3_bits_to_f16_bits_over_256(b)) << lo << " " << hi;
          ASSERT_EQ(f16_bits_to_float(half) * 256.0f, e4m3_bits_to_float(b));
        }
      }
    }
  }
}

}  // namespace leanattn
