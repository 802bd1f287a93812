// ggml's block formats (q8_0, q4_0; dtype.hpp has the definitions) decoded one value at a time
// in float: the CPU engine's portable fallback and the naive same-precision baseline read
// through this (the SIMD loaders follow the same rules; the fp64 reference decodes the codes on
// its own, src/reference/read_element.hpp, sharing only the f16 scale's decoder).
#pragma once

#include <cstdint>

#include "leanattn/core/float16.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn {

// Value i of a `type` row whose first block starts at `row`: d x q (q8_0) or d x (nibble - 8)
// (q4_0), d the f16 scale of block i / 32.
inline float block_format_value(const unsigned char* row, DType type, std::int32_t i) {
  const unsigned char* block = row + (i / kBlockValues) * block_bytes(type);
  const float d = f16_bits_to_float(static_cast<std::uint16_t>(block[0] | block[1] << 8));
  const int j = i % kBlockValues;
  if (type == DType::q8_0) return d * static_cast<float>(static_cast<std::int8_t>(block[2 + j]));
  const int byte = block[2 + j % 16];
  return d * static_cast<float>((j < 16 ? byte & 0x0f : byte >> 4) - 8);
}

}  // namespace leanattn
