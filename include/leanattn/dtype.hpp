// Element types of Q, K, V and the output. Used by the problem description, the executors and
// every front end (CLI flags and Python dtypes map onto DType).
#pragma once

#include <cstdint>
#include <string_view>

namespace leanattn {

enum class DType : std::uint8_t { f32, f16, bf16 };

constexpr std::size_t dtype_size(DType t) {
  return t == DType::f32 ? 4 : 2;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

// Parses "f32" | "f16" | "bf16" (also "float32", "float16", "bfloat16"); throws Error naming
// `argument` otherwise.
DType parse_dtype(std::string_view text, const char* argument = "dtype");

}  // namespace leanattn
