// Element types of Q, K, V and the output. Used by the problem description, the executors and
// every front end (CLI flags and Python dtypes map onto DType). Q and the output are f32, f16 or
// bf16; K and V may also be 8-bit (quantized caches, read with float scales: docs/numerics.md,
// "Quantized KV caches").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace leanattn {

// fp8_e4m3: OCP E4M3FN (bias 7, no infinities, NaN = S.1111.111, max 448; torch.float8_e4m3fn).
// fp8_e5m2: OCP E5M2 (bias 15, IEEE-like infinities and NaN, max 57344; torch.float8_e5m2).
// int8:     two's complement, symmetric (value = stored x scale, no zero point).
enum class DType : std::uint8_t { f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::int8:
      return 1;
  }
  return 0;
}

// The 8-bit KV types: stored with scales (DecodeProblem::kv_scale), never valid for Q or out.
constexpr bool is_quantized(DType t) {
  return t == DType::fp8_e4m3 || t == DType::fp8_e5m2 || t == DType::int8;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::fp8_e4m3:
      return "fp8_e4m3";
    case DType::fp8_e5m2:
      return "fp8_e5m2";
    case DType::int8:
      return "int8";
  }
  return "?";
}

// Parses "f32" | "f16" | "bf16" (also "float32", "float16", "bfloat16") and the 8-bit KV types
// "fp8_e4m3" | "fp8_e5m2" | "int8" (also "float8_e4m3fn", "float8_e5m2"); throws Error naming
// `argument` otherwise.
DType parse_dtype(std::string_view text, const char* argument = "dtype");

}  // namespace leanattn
