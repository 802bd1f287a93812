// Internal to the reference folder: read one element of any DType as double. The 8-bit types
// give their stored value (the caller multiplies by the scale), decoded literally from the format
// definitions, sharing nothing with the engines' bit tricks (core/float8.hpp). Deliberately a
// second decoder: the naive same-precision baseline (tools/harness/naive_baseline.cpp) reads
// through the engines' converters, so that it rounds as they do; this one stays independent, so
// that a wrong converter shows up as a mismatch against the reference instead of on both sides.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "leanattn/core/float16.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn::reference {

// An OCP 8-bit float: sign, `ebits` exponent bits with bias 2^(ebits-1) - 1, `mbits` mantissa
// bits. `ieee`: an all-ones exponent is infinity (mantissa 0) or NaN (E5M2); otherwise only the
// all-ones pattern is NaN and there are no infinities (E4M3FN).
inline double fp8_value(std::uint8_t bits, int ebits, int mbits, bool ieee) {
  const int bias = (1 << (ebits - 1)) - 1;
  const int e = (bits >> mbits) & ((1 << ebits) - 1);
  const int m = bits & ((1 << mbits) - 1);
  const double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
  const int all_ones = (1 << ebits) - 1;
  if (ieee && e == all_ones) return m == 0 ? sign * std::numeric_limits<double>::infinity() : NAN;
  if (!ieee && e == all_ones && m == (1 << mbits) - 1) return NAN;
  if (e == 0) return sign * m * std::ldexp(1.0, 1 - bias - mbits);  // subnormal
  return sign * (1.0 + m * std::ldexp(1.0, -mbits)) * std::ldexp(1.0, e - bias);
}

inline double read_element(const void* base, DType type, std::int64_t index) {
  const char* at =
      static_cast<const char*>(base) + index * static_cast<std::int64_t>(dtype_size(type));
  switch (type) {
    case DType::f32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case DType::f16:
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, at, 2);
      return type == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
    case DType::fp8_e4m3:
      return fp8_value(static_cast<std::uint8_t>(*at), 4, 3, false);
    case DType::fp8_e5m2:
      return fp8_value(static_cast<std::uint8_t>(*at), 5, 2, true);
    case DType::int8:
      return static_cast<std::int8_t>(*at);
    case DType::q8_0:
    case DType::q4_0:
      break;  // not addressable by element: read_kv
  }
  return NAN;
}

// Value i of a ggml block-format row whose first block starts at byte `row`, from ggml's
// definition (ggml-common.h): block i / 32 holds an f16 scale d, then q8_0: 32 int8 q, value
// d x q; q4_0: 16 bytes, value j < 16 in the low nibble of byte j, j >= 16 in the high nibble of
// byte j - 16, value d x (nibble - 8).
inline double read_block_value(const void* base, DType type, std::int64_t row, std::int32_t i) {
  const auto* block = static_cast<const unsigned char*>(base) + row +
                      static_cast<std::int64_t>(i / kBlockValues) * block_bytes(type);
  const double d = f16_bits_to_float(static_cast<std::uint16_t>(block[0] | block[1] << 8));
  const int j = i % kBlockValues;
  if (type == DType::q8_0) return d * static_cast<std::int8_t>(block[2 + j]);
  const int byte = block[2 + j % 16];
  return d * ((j < 16 ? byte & 0x0f : byte >> 4) - 8);
}

// Value i of the K or V row that starts at unit `row` (dtype_size units): the stored element, or
// a block format's decoded value (its scale included).
inline double read_kv(const void* base, DType type, std::int64_t row, std::int32_t i) {
  return is_block_format(type) ? read_block_value(base, type, row, i)
                               : read_element(base, type, row + i);
}

}  // namespace leanattn::reference
