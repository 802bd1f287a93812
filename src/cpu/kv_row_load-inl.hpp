// Turning a run of stored K or V elements into f32 vectors, one loader per KV dtype, compiled for
// every Highway target (segment_kernel.cpp includes it after foreach_target.h; Highway's per-target
// include guard below). Everything widens in registers: no widened copy of the cache exists.
//   f32          a load
//   f16          F16C (AVX2 and up), FCVTL (NEON, SVE); the exact bit conversion below on SSE4
//                and the emulated targets
//   bf16         a shift (Highway's PromoteTo)
//   fp8_e5m2     the top byte of a half: zero-extend, shift left 8, then as f16 (exact)
//   fp8_e4m3     sign-extend to 16 bits, shift left 7 and clear bit 14: the half whose value is
//                the E4M3 value / 2^8 (exact, subnormals included; kLoadFactor puts the 2^8 into
//                the scale), its NaN pattern S.1111.111 replaced by a half NaN; then as f16
//   int8         sign-extend to 32 bits, convert to float (exact)
//   q8_0, q4_0   ggml's blocks (load_kv): the block's f16 scale broadcast and widened, its codes
//                widened as int8 (q4_0: the nibbles of half a block's bytes, minus 8), one multiply
// Operations per vector of floats, each with one load: f16 1, bf16 2, e5m2 3, int8 2, e4m3 8 (its
// NaN compare and blend included); measured costs in docs/cpu-engine.md, "Quantized caches".
#if defined(LEANATTN_CPU_KV_ROW_LOAD_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_KV_ROW_LOAD_INL_HPP_
#undef LEANATTN_CPU_KV_ROW_LOAD_INL_HPP_
#else
#define LEANATTN_CPU_KV_ROW_LOAD_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstring>
#include <type_traits>

#include "cpu/kv_elements.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f16 -> f32 by one instruction: F16C with AVX2 and AVX-512, FCVTL / FCVT with 64-bit Arm's NEON
// and SVE. SSE4 and the emulated targets (EMU128, SCALAR) convert with integer operations
// (f16_bits_to_f32 below).
constexpr bool kF16Instruction =
    HWY_ARCH_X86 ? HWY_TARGET < HWY_SSE4
                 : HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR;

#if HWY_TARGET != HWY_SCALAR

// IEEE half -> float from the bits, exact for every input (NaN, infinities, subnormals). Used on
// targets without a native conversion instruction, where Highway 1.0's emulation turns NaN and
// infinity into large finite values.
template <class DF>
HWY_INLINE hn::Vec<DF> f16_bits_to_f32(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h16) {
  const hn::RebindToUnsigned<DF> du;
  const auto h = hn::PromoteTo(du, h16);
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto exp = hn::And(hn::ShiftRight<10>(h), hn::Set(du, 0x1fu));
  const auto man = hn::And(h, hn::Set(du, 0x3ffu));
  const auto normal =
      hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(du, 112u))), hn::ShiftLeft<13>(man));
  const auto special = hn::Or(hn::Set(du, 0x7f800000u), hn::ShiftLeft<13>(man));
  const auto subnormal = hn::Mul(hn::ConvertTo(df, hn::BitCast(hn::RebindToSigned<DF>(), man)),
                                 hn::Set(df, 5.9604644775390625e-08f));  // man x 2^-24
  auto mag = hn::BitCast(df, hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x1fu)), special, normal));
  mag = hn::IfThenElse(hn::RebindMask(df, hn::Eq(exp, hn::Zero(du))), subnormal, mag);
  return hn::BitCast(df, hn::Or(hn::BitCast(du, mag), sign));
}

// Half bits (one per float lane) -> float: F16C where the target has it.
template <class DF>
HWY_INLINE hn::Vec<DF> half_bits_to_f32(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h16) {
  if constexpr (!kF16Instruction) {
    return f16_bits_to_f32(df, h16);
  } else {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::BitCast(dh, h16));
  }
}

// Lanes(df) elements from p as floats: the stored value / kLoadFactor<KvT> (1 but for E4M3).
template <class DF, class KvT>
HWY_INLINE hn::Vec<DF> load_row(DF df, const KvT* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  if constexpr (std::is_same_v<KvT, float>) {
    return hn::LoadU(df, p);
  } else if constexpr (std::is_same_v<KvT, hwy::float16_t> && !kF16Instruction) {
    return f16_bits_to_f32(df, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  } else if constexpr (std::is_same_v<KvT, Fp8E5m2>) {
    const hn::Rebind<uint8_t, DF> du8;
    const auto bytes = hn::LoadU(du8, reinterpret_cast<const uint8_t*>(p));
    return half_bits_to_f32(df, hn::ShiftLeft<8>(hn::PromoteTo(du16, bytes)));
  } else if constexpr (std::is_same_v<KvT, Fp8E4m3>) {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int16_t, DF> di16;
    const auto wide =
        hn::BitCast(du16, hn::PromoteTo(di16, hn::LoadU(di8, reinterpret_cast<const int8_t*>(p))));
    // Sign-extended S.EEEE.MMM shifted left 7: sign in bits 15 and 14, EEEE.MMM in 13..7.
    const auto shifted = hn::ShiftLeft<7>(wide);
    const auto half = hn::And(shifted, hn::Set(du16, 0xbfffu));
    const auto magnitude = hn::And(shifted, hn::Set(du16, 0x3f80u));
    const auto nan = hn::Or(half, hn::Set(du16, 0x7e00u));  // keeps the sign
    return half_bits_to_f32(df,
                            hn::IfThenElse(hn::Eq(magnitude, hn::Set(du16, 0x3f80u)), nan, half));
  } else if constexpr (std::is_same_v<KvT, std::int8_t>) {
    const hn::Rebind<int8_t, DF> di8;
    const hn::RebindToSigned<DF> di32;
    return hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, p)));
  } else {
    const hn::Rebind<KvT, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, p));
  }
}

// Lanes(df) values of a block-format row from value i on (i a multiple of Lanes(df), at most 16
// lanes, so they lie in one block, and for q4_0 in one half of it: low or high nibbles); d: the
// block's scale in every lane.
template <class DF, class KvT>
HWY_INLINE hn::Vec<DF> load_block(DF df, const KvT* HWY_RESTRICT row, std::int32_t i,
                                  hn::Vec<DF> d) {
  // The tiled kernel's widest vector (AVX-512) and the row kernel's capped ones (SVE) hold 16.
  static_assert(hn::MaxLanes(DF()) <= 16, "a vector of values must lie within one block");
  const hn::RebindToSigned<DF> di32;
  const auto* codes = reinterpret_cast<const uint8_t*>(row) + (i >> 5) * kBlockBytes<KvT> + 2;
  if constexpr (std::is_same_v<KvT, Q8_0Byte>) {
    const hn::Rebind<int8_t, DF> di8;
    const auto q =
        hn::PromoteTo(di32, hn::LoadU(di8, reinterpret_cast<const int8_t*>(codes + (i & 31))));
    return hn::Mul(hn::ConvertTo(df, q), d);
  } else {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::RebindToUnsigned<DF> du32;
    const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, codes + (i & 15)));
    const auto nibbles =
        (i & 16) != 0 ? hn::ShiftRight<4>(bytes) : hn::And(bytes, hn::Set(du32, 0xfu));
    return hn::Mul(hn::Sub(hn::ConvertTo(df, hn::BitCast(di32, nibbles)), hn::Set(df, 8.0f)), d);
  }
}

// Block formats: the converted scales of the block that holds value i, for rows t, t + 1, ... of
// `k` (one base per step of tokens: the loads below add only their token); null otherwise.
template <class KvT>
HWY_INLINE const float* column_scales(const KvRows<KvT>& k, std::int32_t t, std::int32_t i) {
  if constexpr (kBlockKv<KvT>) {
    return k.scales + (i >> 5) * kKernelRowsPadded + t;
  } else {
    return nullptr;
  }
}

// Lanes(df) values of `row` from value i on: load_row for element types, load_block with the
// block's scale (scales[u], scales from column_scales) for ggml's block formats.
template <class DF, class KvT>
HWY_INLINE hn::Vec<DF> load_kv(DF df, const KvT* HWY_RESTRICT row, const float* scales,
                               std::int32_t u, std::int32_t i) {
  if constexpr (kBlockKv<KvT>) {
    return load_block(df, row, i, hn::Set(df, scales[u]));
  } else {
    return load_row(df, row + i);
  }
}

// scales[b * kKernelRowsPadded + t] = the f16 scale of block b of rows[t] as float, for t < count
// rounded up to a vector (block formats; rows[t] valid up to there): gathered as bits, then
// widened a vector at a time. bits: scratch of blocks x kKernelRowsPadded. (The gather is most of
// what a block format's scales cost: 7.5 of 46.5 ticks per token and KV head for SmolLM2's
// shape from cache, docs/cpu-engine.md.)
template <class DF, class KvT>
HWY_INLINE void block_row_scales(DF df, const KvT* const* rows, std::int32_t count,
                                 std::int32_t blocks, uint16_t* HWY_RESTRICT bits,
                                 float* HWY_RESTRICT scales) {
  const hn::Rebind<uint16_t, DF> du16;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const std::int32_t rows_used = (count + n - 1) / n * n;  // at most kKernelRowsPadded (48)
  for (std::int32_t t = 0; t < rows_used; ++t) {
    const auto* row = reinterpret_cast<const uint8_t*>(rows[t]);
    for (std::int32_t b = 0; b < blocks; ++b) {
      std::memcpy(&bits[b * kKernelRowsPadded + t], row + b * kBlockBytes<KvT>, 2);
    }
  }
  for (std::int32_t b = 0; b < blocks; ++b) {
    for (std::int32_t t = 0; t < rows_used; t += n) {
      const std::int32_t j = b * kKernelRowsPadded + t;
      hn::Store(half_bits_to_f32(df, hn::Load(du16, bits + j)), df, scales + j);
    }
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

// The other half of reading a quantized cache: s[t * stride + r] *= scales[t] for r < R and
// t < tokens, on a block's scores (K's scales, before the variants' rules) or its softmax weights
// (V's scales, after l took them unscaled). A scale per token costs R multiplies per token, not
// one per element.
template <int R, int kStride>
HWY_INLINE void scale_token_rows(float* HWY_RESTRICT s, const float* HWY_RESTRICT scales,
                                 std::int32_t tokens) {
  for (std::int32_t t = 0; t < tokens; ++t) {
    for (int r = 0; r < R; ++r) s[t * kStride + r] *= scales[t];
  }
}

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_KV_ROW_LOAD_INL_HPP_
