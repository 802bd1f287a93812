// Scores of a block by bf16 dot products (AVX512-BF16's VDPBF16PS), for the AVX3 target's
// "AVX3_BF16" kernel (segment_kernel.cpp registers it where the CPU has the instruction): with
// bf16 Q and bf16 K, each instruction multiplies 32 pairs of Q's and K's own bf16 values (exact
// products in fp32) and adds them to 16 fp32 sums, twice the multiply-adds of an fp32 FMA and no
// widening of K. Q is read unscaled (its own bits: no rounding), and the softmax scale multiplies
// the reduced scores. Inputs and results below fp32's normal range are flushed to zero by the
// instruction. segment_kernel.cpp includes it after foreach_target.h.
#if defined(LEANATTN_CPU_SCORE_BLOCK_BF16_DOT_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_SCORE_BLOCK_BF16_DOT_INL_HPP_
#undef LEANATTN_CPU_SCORE_BLOCK_BF16_DOT_INL_HPP_
#else
#define LEANATTN_CPU_SCORE_BLOCK_BF16_DOT_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "cpu/kernel_shape-inl.hpp"
#include "cpu/kv_elements.hpp"
#include "cpu/score_block-inl.hpp"

#if HWY_TARGET == HWY_AVX3
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3

// bf16 values per 512-bit vector: a dot-product step covers 32 of head_dim (a multiple of 32).
inline constexpr std::int32_t kBf16DotValues = 32;

// S[t * stride + r] = scale x (q[r] . k[t]) for t in [0, tokens_padded), as qk_block, with q
// [R, d] the query rows' own bf16 bits and d a multiple of 32.
// Compiled for AVX3's instruction sets plus AVX512-BF16 (a target attribute replaces the
// namespace's, on clang, so it names both).
template <int R>
__attribute__((target(HWY_TARGET_STR ",avx512bf16"))) HWY_NOINLINE void qk_block_bf16_dot(
    const std::uint16_t* HWY_RESTRICT q, const KvRows<hwy::bfloat16_t>& krow,
    std::int32_t tokens_padded, std::int32_t d, float scale, float* HWY_RESTRICT s,
    const char* const* prefetch, std::int32_t prefetch_count) {
  constexpr int U = score_tokens<R>();
  const DF df;
  const std::int32_t vectors = d / kBf16DotValues;
  const std::int32_t per_vector = prefetch_count > 0 ? (U + vectors - 1) / vectors : 0;
  const VF scale_v = hn::Set(df, scale);
  for (std::int32_t t = 0; t < tokens_padded; t += U) {
    std::int32_t pu = 0;  // next token to prefetch for: t + pu
    VF acc[R * U];
    for (int a = 0; a < R * U; ++a) acc[a] = hn::Zero(df);
    for (std::int32_t i = 0; i < d; i += kBf16DotValues) {
      for (std::int32_t j = 0; j < per_vector && pu < U; ++j, ++pu) {
        prefetch_lines(prefetch[t + pu], 0, prefetch_count);
      }
      __m512bh k[U];
      for (int u = 0; u < U; ++u) k[u] = (__m512bh)_mm512_loadu_si512(krow.rows[t + u] + i);
      for (int r = 0; r < R; ++r) {
        const auto qv = (__m512bh)_mm512_loadu_si512(q + r * d + i);
        for (int u = 0; u < U; ++u) {
          acc[u * R + r] = VF{_mm512_dpbf16_ps(acc[u * R + r].raw, qv, k[u])};
        }
      }
    }
    store_scores<R, true>(df, acc, scale_v, s + t * score_stride<R>());
  }
}

#endif  // HWY_TARGET == HWY_AVX3

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_SCORE_BLOCK_BF16_DOT_INL_HPP_
