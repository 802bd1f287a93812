// Scores of a block, per Highway target (segment_kernel.cpp includes it after foreach_target.h):
// S[t][r] = q_r . k_t for R query rows and U tokens at a time (qk_block), K widened to f32 in
// registers, the R x U dot products reduced four at a time by a transpose tree and stored a whole
// vector of totals at a time.
#if defined(LEANATTN_CPU_SCORE_BLOCK_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_SCORE_BLOCK_INL_HPP_
#undef LEANATTN_CPU_SCORE_BLOCK_INL_HPP_
#else
#define LEANATTN_CPU_SCORE_BLOCK_INL_HPP_
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

// Stores the lane sums of a, b, c, d to dst[0..3]. Within each 128-bit block, two interleave
// rounds transpose the four vectors so one add gives [a, b, c, d] partial sums; the blocks are
// then folded by halving.
template <class D>
HWY_INLINE void store_fold(D d, hn::Vec<D> v, float* HWY_RESTRICT dst) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    store_fold(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)), dst);
  } else {
    hn::StoreU(v, d, dst);
  }
}

// Lane j of every 128-bit block of the result: a partial sum of input j % 4 (a, b, c, d), so
// that the blocks' sum is [sum(a), sum(b), sum(c), sum(d)].
HWY_INLINE VF block_sums4(DF df, VF a, VF b, VF c, VF d) {
  const VF ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  const VF cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  const hn::Repartition<uint64_t, DF> du;
  const auto ab64 = hn::BitCast(du, ab);
  const auto cd64 = hn::BitCast(du, cd);
  return hn::Add(hn::BitCast(df, hn::InterleaveLower(du, ab64, cd64)),
                 hn::BitCast(df, hn::InterleaveUpper(du, ab64, cd64)));
}

// Blocks of 128 bits per vector: the results of block_sums4 that one vector of totals holds.
constexpr int kSumsPerVector = kF32Lanes / 4;

// Stores the totals of kSumsPerVector results of block_sums4 (x[i]'s four sums to dst[4i..4i+3])
// with one store: the blocks are added across the vectors by block shuffles, not folded one
// vector at a time (fewer shuffles, and the softmax's full-vector loads of S then read one
// store, not four).
HWY_INLINE void store_block_totals(DF df, const VF* x, float* HWY_RESTRICT dst) {
  if constexpr (kSumsPerVector == 4) {  // blocks A = b0 + b2, B = b1 + b3 of each, then A + B
    const VF u02 =
        hn::Add(hn::ConcatLowerLower(df, x[2], x[0]), hn::ConcatUpperUpper(df, x[2], x[0]));
    const VF u13 =
        hn::Add(hn::ConcatLowerLower(df, x[3], x[1]), hn::ConcatUpperUpper(df, x[3], x[1]));
    const VF a = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(u13), u02);  // [x0.A x1.A x2.A x3.A]
    const VF b = hn::OddEvenBlocks(u13, hn::SwapAdjacentBlocks(u02));  // [x0.B x1.B x2.B x3.B]
    hn::StoreU(hn::Add(a, b), df, dst);
  } else if constexpr (kSumsPerVector == 2) {
    hn::StoreU(hn::Add(hn::ConcatLowerLower(df, x[1], x[0]), hn::ConcatUpperUpper(df, x[1], x[0])),
               df, dst);
  } else {
    hn::StoreU(x[0], df, dst);
  }
}

// A step's U x stride scores from its R x U accumulators (acc[u * R + r]: row r, token u) to
// dst on (a token's rows at the stride), each total times `scale` when kScaled: in groups of four
// accumulators, with stride = R consecutive ones, else each token's R rows padded with zeros to
// the stride.
template <int R, bool kScaled>
HWY_INLINE void store_scores(DF df, const VF* acc, VF scale, float* HWY_RESTRICT dst) {
  constexpr int U = score_tokens<R>();
  constexpr int S = score_stride<R>();
  const VF zero = hn::Zero(df);
  auto group = [&](int g) {
    VF sums;
    if constexpr (S == R) {
      sums = block_sums4(df, acc[4 * g], acc[4 * g + 1], acc[4 * g + 2], acc[4 * g + 3]);
    } else {
      const int u = g / (S / 4), r = g % (S / 4) * 4;
      const VF* a = acc + u * R + r;
      sums = block_sums4(df, a[0], r + 1 < R ? a[1] : zero, r + 2 < R ? a[2] : zero,
                         r + 3 < R ? a[3] : zero);
    }
    if constexpr (kScaled) sums = hn::Mul(sums, scale);
    return sums;
  };
  constexpr int kGroups = U * S / 4;
  int g = 0;
  for (; g + kSumsPerVector <= kGroups; g += kSumsPerVector) {
    VF x[kSumsPerVector];
    for (int i = 0; i < kSumsPerVector; ++i) x[i] = group(g + i);
    store_block_totals(df, x, dst + 4 * g);
  }
  for (; g < kGroups; ++g) store_fold(df, group(g), dst + 4 * g);
}

// S[t * stride + r] = q[r] . k[t] for t in [0, tokens_padded), tokens_padded a multiple of U,
// stride = score_stride<R>() (the padding rows r >= R get 0). q: [R, d] float; krow.rows[t]: the
// K row of token t. With token t it prefetches `prefetch_count` lines from prefetch[t].

template <int R, class KvT>
HWY_NOINLINE void qk_block(const float* HWY_RESTRICT q, const KvRows<KvT>& krow,
                           std::int32_t tokens_padded, std::int32_t d, float* HWY_RESTRICT s,
                           const char* const* prefetch, std::int32_t prefetch_count) {
  constexpr int U = score_tokens<R>();
  constexpr int S = score_stride<R>();
  static_assert(S != R || R * U % 4 == 0);
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  // A step's U tokens x prefetch_count lines go out a token's lines per column vector of d (a
  // few tokens' when U exceeds the vectors), not in one burst (a burst of more misses than the
  // core tracks stalls it); a token's lines are consecutive, so no bookkeeping per line.
  const std::int32_t vectors = d / n;
  const std::int32_t per_vector = prefetch_count > 0 ? (U + vectors - 1) / vectors : 0;
  for (std::int32_t t = 0; t < tokens_padded; t += U) {
    std::int32_t pu = 0;  // next token to prefetch for: t + pu
    VF acc[R * U];
    for (int a = 0; a < R * U; ++a) acc[a] = hn::Zero(df);
    for (std::int32_t i = 0; i < d; i += n) {
      for (std::int32_t j = 0; j < per_vector && pu < U; ++j, ++pu) {
        prefetch_lines(prefetch[t + pu], 0, prefetch_count);
      }
      VF k[U];
      const float* scales = column_scales(krow, t, i);
      for (int u = 0; u < U; ++u) k[u] = load_kv(df, krow.rows[t + u], scales, u, i);
      for (int r = 0; r < R; ++r) {
        const VF qv = hn::LoadU(df, q + r * d + i);
        for (int u = 0; u < U; ++u) acc[u * R + r] = hn::MulAdd(qv, k[u], acc[u * R + r]);
      }
    }
    store_scores<R, false>(df, acc, hn::Zero(df), s + t * S);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_SCORE_BLOCK_INL_HPP_
