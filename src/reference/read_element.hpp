// Internal to the reference folder: read one element of any DType as double.
#pragma once

#include <cstdint>
#include <cstring>

#include "leanattn/core/float16.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn::reference {

inline double read_element(const void* base, DType type, std::int64_t index) {
  if (type == DType::f32) {
    float f;
    std::memcpy(&f, static_cast<const char*>(base) + index * 4, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, static_cast<const char*>(base) + index * 2, 2);
  return type == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
}

}  // namespace leanattn::reference
