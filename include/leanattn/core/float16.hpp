// Bit-exact conversions between float and the two 16-bit formats (IEEE binary16 and bfloat16),
// round-to-nearest-even, NaN and infinity preserved. Host code: the reference, the test data
// generators and the scalar paths use them; SIMD and CUDA code convert in registers instead.
#pragma once

#include <bit>
#include <cstdint>

namespace leanattn {

constexpr float bf16_bits_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

constexpr std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

constexpr float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return std::bit_cast<float>(sign);  // +-0
  // Subnormal: value = man * 2^-24.
  const float mag = static_cast<float>(man) * 5.9604644775390625e-08f;
  return sign ? -mag : mag;
}

constexpr std::uint16_t float_to_f16_bits(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: value / 2^-24, rounded to even
    const float mag = std::bit_cast<float>(abs);
    const float scaled = mag * 16777216.0f;  // exact (power of two)
    auto q = static_cast<std::uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  std::uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);       // round to nearest even on the 13 dropped bits
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

// Rounds a float to the nearest value representable in `bits` format (used to model what a
// same-precision naive implementation would see).
constexpr float round_to_f16(float f) {
  return f16_bits_to_float(float_to_f16_bits(f));
}
constexpr float round_to_bf16(float f) {
  return bf16_bits_to_float(float_to_bf16_bits(f));
}

}  // namespace leanattn
