// Values of a block, per Highway target (segment_kernel.cpp includes it after foreach_target.h):
// o_r = o_r x rescale_r + sum_t P[t][r] v_t for R query rows, R x C vectors of o in registers
// across the block's tokens, V widened to f32 in registers, its next rows prefetched.
#if defined(LEANATTN_CPU_VALUE_BLOCK_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_VALUE_BLOCK_INL_HPP_
#undef LEANATTN_CPU_VALUE_BLOCK_INL_HPP_
#else
#define LEANATTN_CPU_VALUE_BLOCK_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "cpu/kernel_shape-inl.hpp"
#include "cpu/kv_row_load-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The tiled kernel's (SCALAR and the scalable-vector targets run row_kernel-inl.hpp).
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// o[r] = o[r] * rescale[r] + sum_t P[t * stride + r] v_t for the R rows, tokens t < tokens, over
// the columns [i0, i1) of d (a multiple of C vectors; chunk0 = chunks of d before i0). R x C
// accumulators stay in registers over the tokens. The `prefetch_count` lines from prefetch[t] are
// spread over the chunks of d.
template <int R, int C, class KvT>
HWY_NOINLINE void pv_block(const float* HWY_RESTRICT p, const KvRows<KvT>& vrow,
                           std::int32_t tokens, std::int32_t d, std::int32_t i0, std::int32_t i1,
                           std::int32_t chunk0, const float* rescale, float* HWY_RESTRICT o,
                           const char* const* prefetch, std::int32_t prefetch_count) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  for (std::int32_t i = i0, chunk = chunk0; i < i1; i += C * n, ++chunk) {
    // This chunk's share of the prefetch lines [first, first + lines): line `chunk` for each
    // chunk of d, the rest with the last one (no divisions: this runs per chunk and block).
    const std::int32_t first = std::min(chunk, prefetch_count);
    const std::int32_t lines =
        i + C * n >= d ? prefetch_count - first : std::min(1, prefetch_count - first);
    VF acc[R * C];
    for (int r = 0; r < R; ++r) {
      const VF sc = hn::Set(df, rescale[r]);
      for (int c = 0; c < C; ++c)
        acc[r * C + c] = hn::Mul(sc, hn::LoadU(df, o + r * d + i + c * n));
    }
    HWY_UNROLL(2)
    for (std::int32_t t = 0; t < tokens; ++t) {
      prefetch_lines(prefetch[t], first, lines);
      VF v[C];
      for (int c = 0; c < C; ++c) {
        v[c] = load_kv(df, vrow.rows[t], column_scales(vrow, t, i + c * n), 0, i + c * n);
      }
      for (int r = 0; r < R; ++r) {
        const VF pr = hn::Set(df, p[t * score_stride<R>() + r]);
        for (int c = 0; c < C; ++c) acc[r * C + c] = hn::MulAdd(pr, v[c], acc[r * C + c]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) hn::StoreU(acc[r * C + c], df, o + r * d + i + c * n);
    }
  }
}

// Columns of d in chunks of C = value_vectors<R>() vectors, with the rest in chunks of 4 (when C
// exceeds 4), then of 2 and at most one of 1: a chunk of 1 keeps only R accumulators in flight,
// too few to hide the FMA latency, so with C = 3 and 16 vectors this does 3+3+3+3+2+2, not
// 3+3+3+3+3+1; and a 64-wide head on AVX-512 (4 vectors) is one chunk of 4, not two of 2.
template <int R, class KvT>
HWY_INLINE void pv_dispatch(const float* p, const KvRows<KvT>& vrow, std::int32_t tokens,
                            std::int32_t d, const float* rescale, float* o,
                            const char* const* prefetch, std::int32_t prefetch_count) {
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(DF()));
  constexpr int kC = value_vectors<R>();
  const std::int32_t vectors = d / n;
  std::int32_t wide = vectors / kC;  // chunks of kC
  if constexpr (kC > 2) {
    while (wide > 0 && (vectors - wide * kC) % 2 != 0) --wide;
  }
  const std::int32_t i1 = wide * kC * n;
  const std::int32_t i4 = kC > 4 ? i1 + (d - i1) / (4 * n) * (4 * n) : i1;
  const std::int32_t i2 = kC > 2 ? i4 + (d - i4) / (2 * n) * (2 * n) : i4;
  const std::int32_t fours = (i4 - i1) / (4 * n), twos = (i2 - i4) / (2 * n);
  if (i1 > 0) pv_block<R, kC>(p, vrow, tokens, d, 0, i1, 0, rescale, o, prefetch, prefetch_count);
  if constexpr (kC > 4) {
    if (i4 > i1)
      pv_block<R, 4>(p, vrow, tokens, d, i1, i4, wide, rescale, o, prefetch, prefetch_count);
  }
  if (i2 > i4)
    pv_block<R, 2>(p, vrow, tokens, d, i4, i2, wide + fours, rescale, o, prefetch, prefetch_count);
  if (d > i2)
    pv_block<R, 1>(p, vrow, tokens, d, i2, d, wide + fours + twos, rescale, o, prefetch,
                   prefetch_count);
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_VALUE_BLOCK_INL_HPP_
