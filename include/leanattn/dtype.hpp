// Element types of Q, K, V and the output. Used by the problem description, the executors and
// every front end (CLI flags and Python dtypes map onto DType). Q and the output are f32, f16 or
// bf16; K and V may also be 8-bit (quantized caches, read with float scales: docs/numerics.md,
// "Quantized KV caches") or in ggml's block formats (q8_0, q4_0: scales inside the blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace leanattn {

// fp8_e4m3: OCP E4M3FN (bias 7, no infinities, NaN = S.1111.111, max 448; torch.float8_e4m3fn).
// fp8_e5m2: OCP E5M2 (bias 15, IEEE-like infinities and NaN, max 57344; torch.float8_e5m2).
// int8:     two's complement, symmetric (value = stored x scale, no zero point).
// q8_0:     ggml's block of 32 values, 34 bytes: an f16 scale d, then 32 int8 q (value = d x q).
// q4_0:     ggml's block of 32 values, 18 bytes: an f16 scale d, then 16 bytes holding value j
//           (j < 16) in the low nibble of byte j and value j + 16 in its high nibble
//           (value = d x (nibble - 8)). A K or V row of head_dim values is head_dim / 32 blocks.
enum class DType : std::uint8_t { f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, q8_0, q4_0 };

// ggml's block formats (q8_0, q4_0): K and V only, strides counted in bytes.
constexpr bool is_block_format(DType t) {
  return t == DType::q8_0 || t == DType::q4_0;
}
// Values per block and bytes per block of a block format (ggml's QK8_0 = QK4_0 = 32).
inline constexpr std::int32_t kBlockValues = 32;
constexpr std::int32_t block_bytes(DType t) {
  return t == DType::q8_0 ? 34 : t == DType::q4_0 ? 18 : 0;
}

// The unit that strides of a tensor of this type count: the element's size, or a byte for the
// block formats (their rows are whole blocks, at any byte address: ggml's rows of 34- or
// 18-byte blocks have no wider alignment).
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0:
      return 1;
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

// Units (dtype_size) of one K or V row of head_dim values: head_dim elements, or the bytes of
// head_dim / 32 blocks (head_dim a multiple of 32 there: validate(DecodeProblem)).
constexpr std::int64_t row_units(DType t, std::int64_t head_dim) {
  return is_block_format(t) ? head_dim / kBlockValues * block_bytes(t) : head_dim;
}

// The 8-bit KV types: stored with scales (DecodeProblem::kv_scale), never valid for Q or out.
constexpr bool is_quantized(DType t) {
  return t == DType::fp8_e4m3 || t == DType::fp8_e5m2 || t == DType::int8;
}

// Types for K and V only, never for Q, out or a bias: the 8-bit types and the block formats.
constexpr bool is_kv_only(DType t) {
  return is_quantized(t) || is_block_format(t);
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
    case DType::q8_0:
      return "q8_0";
    case DType::q4_0:
      return "q4_0";
  }
  return "?";
}

// Parses "f32" | "f16" | "bf16" (also "float32", "float16", "bfloat16") and the 8-bit KV types
// "fp8_e4m3" | "fp8_e5m2" | "int8" (also "float8_e4m3fn", "float8_e5m2") and ggml's block formats
// "q8_0" | "q4_0"; throws Error naming
// `argument` otherwise.
DType parse_dtype(std::string_view text, const char* argument = "dtype");

}  // namespace leanattn
