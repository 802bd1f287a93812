// Bit-exact conversions between float and the two OCP 8-bit float formats of quantized KV
// caches: E4M3FN (bias 7, no infinities, NaN = S.1111.111, max 448) and E5M2 (the top byte of an
// IEEE half: bias 15, infinities and NaN). Decoding goes through the half format, as the SIMD
// loaders do (E5M2 is a half's top byte; E4M3's 7 low bits shifted to a half's exponent and
// mantissa give the value / 2^8, exact, subnormals included). Encoding rounds to nearest even and
// saturates to the largest finite value (the mode a quantizer wants; infinities too). Host code:
// the test data, the scalar kernel and the quantization helpers use them; the fp64 reference
// decodes on its own (reference/read_element.hpp). The packed E4M3 pair rule is host/device: the
// CUDA kernel's sm_80 conversion (cuda/collective/ptx.cuh).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/host_device.hpp"

namespace leanattn {

// E4M3 bits -> the half whose value is the E4M3 value / 2^8 (its NaN -> a half NaN).
constexpr std::uint16_t e4m3_bits_to_f16_bits_over_256(std::uint8_t b) {
  const auto sign = static_cast<std::uint16_t>((b & 0x80u) << 8);
  if ((b & 0x7fu) == 0x7fu) return static_cast<std::uint16_t>(sign | 0x7e00u);
  return static_cast<std::uint16_t>(sign | ((b & 0x7fu) << 7));
}

// Two E4M3 bytes in bits 0-7 and 16-23 of `pair` (the other bits 0) -> a half pair whose values
// are the E4M3 values / 2^8, exact, subnormals included: each byte's 7 low bits under a half's
// exponent and mantissa, its sign at the half's bit 15. The NaN pattern S.1111.111 is not special
// (it gives +-480 / 2^8); the scalar rule above maps it to NaN.
LEANATTN_HOST_DEVICE constexpr std::uint32_t e4m3x2_to_f16x2_bits_over_256(std::uint32_t pair) {
  return ((pair & 0x007f007fu) << 7) | ((pair & 0x00800080u) << 8);
}

constexpr float e4m3_bits_to_float(std::uint8_t b) {
  return f16_bits_to_float(e4m3_bits_to_f16_bits_over_256(b)) * 256.0f;
}

constexpr float e5m2_bits_to_float(std::uint8_t b) {
  return f16_bits_to_float(static_cast<std::uint16_t>(b << 8));
}

// Round to nearest even, saturating: `mbits` mantissa bits, smallest normal exponent `emin`,
// largest finite encoding `max_bits` of value `max_value`, NaN encoding `nan_bits`.
inline std::uint8_t float_to_fp8_bits(float f, int mbits, int emin, std::uint8_t max_bits,
                                      float max_value, std::uint8_t nan_bits) {
  const std::uint8_t sign = std::signbit(f) ? 0x80u : 0x00u;
  if (std::isnan(f)) return static_cast<std::uint8_t>(sign | nan_bits);
  const double a = std::fabs(static_cast<double>(f));
  if (a >= max_value) return static_cast<std::uint8_t>(sign | max_bits);
  const int e = a == 0.0 ? emin : std::max(std::ilogb(a), emin);
  // a / quantum is exact (a power of two apart); q counts quanta, 2^(mbits + 1) = the next binade.
  const double q = std::nearbyint(a / std::ldexp(1.0, e - mbits));
  const int bits = ((e - emin) << mbits) + static_cast<int>(q);
  return static_cast<std::uint8_t>(sign | (bits > max_bits ? max_bits : bits));
}

inline std::uint8_t float_to_e4m3_bits(float f) {
  return float_to_fp8_bits(f, 3, -6, 0x7e, 448.0f, 0x7f);
}

inline std::uint8_t float_to_e5m2_bits(float f) {
  return float_to_fp8_bits(f, 2, -14, 0x7b, 57344.0f, 0x7e);
}

// Symmetric int8: round to nearest even, saturating to [-127, 127] (-128 is never produced).
inline std::int8_t float_to_int8(float f) {
  if (std::isnan(f)) return 0;
  const double q = std::nearbyint(static_cast<double>(f));
  return static_cast<std::int8_t>(q > 127.0 ? 127 : q < -127.0 ? -127 : q);
}

// The largest magnitude each 8-bit type stores (the quantizers map a block's absolute maximum
// onto it).
constexpr float kE4m3Max = 448.0f;
constexpr float kE5m2Max = 57344.0f;
constexpr float kInt8Max = 127.0f;

}  // namespace leanattn
