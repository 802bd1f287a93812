// The element types the CPU kernel reads K and V in, as C++ types (one instantiation of the
// kernel per KV dtype), and what is target-independent about reading them: the scalar decode of
// the portable fallback, whether a type carries scales, and the factor a SIMD loader leaves out
// of the value (folded into the scales); ggml's block formats as byte types. The SIMD loaders are
// in kv_row_load-inl.hpp.
#pragma once

#include <hwy/base.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/segment_kernel.hpp"
#include "leanattn/core/block_formats.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/core/float8.hpp"
#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cpu {

// 8-bit floats as distinct types (int8 is std::int8_t).
struct Fp8E4m3 {
  std::uint8_t bits;
};
struct Fp8E5m2 {
  std::uint8_t bits;
};

// ggml's block formats as the bytes of a row (rows are addressed in bytes, at any byte address;
// value i of a row is in block i / 32: kv_value, load_kv in kv_row_load-inl.hpp).
struct Q8_0Byte {
  std::uint8_t bits;
};
struct Q4_0Byte {
  std::uint8_t bits;
};
template <class KvT>
inline constexpr bool kBlockKv = std::is_same_v<KvT, Q8_0Byte> || std::is_same_v<KvT, Q4_0Byte>;
// The DType of a block-format byte type (kBlockKv<KvT> only), and the bytes of one of its blocks
// (dtype.hpp).
template <class KvT>
inline constexpr DType kBlockType = std::is_same_v<KvT, Q8_0Byte> ? DType::q8_0 : DType::q4_0;
template <class KvT>
inline constexpr std::int32_t kBlockBytes = block_bytes(kBlockType<KvT>);

// The K or V rows of a kernel block: row t at rows[t] (t < kKernelRowsPadded); for the block
// formats also the scales of their blocks as floats, scales[b * kKernelRowsPadded + t] for block
// b of row t (block_row_scales in kv_row_load-inl.hpp converts them once per kernel block, so that
// a vector of values costs a broadcast from memory, not a conversion; and the tokens of one block
// column are adjacent, so a step's tokens address them from one base).
template <class KvT>
struct KvRows {
  const KvT* const* rows = nullptr;
  const float* scales = nullptr;  // block formats only: [head_dim / 32][kKernelRowsPadded]
};

// K and V of this type are read with a float scale per block (DecodeTensors::k_scale, v_scale).
template <class KvT>
inline constexpr bool kScaledKv = std::is_same_v<KvT, Fp8E4m3> || std::is_same_v<KvT, Fp8E5m2> ||
                                  std::is_same_v<KvT, std::int8_t>;

// What a SIMD loader returns is value / kLoadFactor: E4M3 is widened through the half format with
// its exponent bias 8 short, an exact 2^-8 (kv_row_load-inl.hpp). The kernel multiplies the
// scales by it, so the data path pays nothing for it.
template <class KvT>
inline constexpr float kLoadFactor = std::is_same_v<KvT, Fp8E4m3> ? 256.0f : 1.0f;

// One stored element as float (the full value, without the scale): the portable fallback's read.
template <class KvT>
inline float element_to_float(KvT x) {
  if constexpr (std::is_same_v<KvT, float>) {
    return x;
  } else if constexpr (std::is_same_v<KvT, Fp8E4m3>) {
    return e4m3_bits_to_float(x.bits);
  } else if constexpr (std::is_same_v<KvT, Fp8E5m2>) {
    return e5m2_bits_to_float(x.bits);
  } else if constexpr (std::is_same_v<KvT, std::int8_t>) {
    return static_cast<float>(x);
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, &x, 2);
    return std::is_same_v<KvT, hwy::float16_t> ? f16_bits_to_float(bits) : bf16_bits_to_float(bits);
  }
}

// Value i of the row at `row` as float (without a separate scale: a block format's own scale
// included): the portable fallback's read.
template <class KvT>
inline float kv_value(const KvT* row, std::int32_t i) {
  if constexpr (kBlockKv<KvT>) {
    return block_format_value(reinterpret_cast<const unsigned char*>(row), kBlockType<KvT>, i);
  } else {
    return element_to_float(row[i]);
  }
}

// out[j] = kLoadFactor<KvT> x the scale of (request, t0 + j, kv_head) for j < count: the factors
// a block's scores (K) or weights (V) are multiplied by (scales addressed like the cache).
template <class KvT>
inline void block_scales(const float* scales, const KvAddressing& at, std::int32_t request,
                         std::int64_t t0, std::int32_t kv_head, std::int32_t count, float* out) {
  for (std::int32_t j = 0; j < count; ++j) {
    out[j] = kLoadFactor<KvT> * scales[at.row(request, t0 + j, kv_head)];
  }
}

}  // namespace leanattn::cpu
