// The many-rows path of the CPU kernel, per Highway target (segment_kernel.cpp includes it after
// foreach_target.h): a pass of many query rows (a prompt chunk: query tokens x the GQA group) over
// a sweep of up to SegmentJob::gemm_blocks blocks of K and V, shaped like a GEMM. The blocks' tiles
// are widened once (gemm_tile-inl.hpp); then for each block of kGemmRows rows and each tile:
//   1. scores  S[r][t] = q_r . k_t   (gemm_scores: kGemmRows rows x 2 vectors of token lanes of
//                                      accumulators, a broadcast of q_r[i] per row and d step)
//   2. per row: the K scales, soft-cap, rules, online softmax and V scales of the tiled kernel
//      (scores_to_weights<1>, softmax_block-inl.hpp), S becoming P in place
//   3. values  o_r = o_r x rescale_r + sum_t P[r][t] v_t   (gemm_values: rows x 2 vectors of o
//                                                              in registers, a broadcast of P)
// Nothing here depends on the cache's type: it is compiled once per target, not per type pair.
// Row blocks that see none of the block's keys (causal, window) are skipped, as the rules would
// leave them unchanged. fp32 throughout, as the tiled kernel.
#if defined(LEANATTN_CPU_GEMM_ROWS_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_GEMM_ROWS_INL_HPP_
#undef LEANATTN_CPU_GEMM_ROWS_INL_HPP_
#else
#define LEANATTN_CPU_GEMM_ROWS_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <limits>

#include "cpu/gemm_tile-inl.hpp"
#include "cpu/kernel_shape-inl.hpp"
#include "cpu/score_rules.hpp"
#include "cpu/segment_kernel.hpp"
#include "cpu/softmax_block-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// Rows per block: as many as leave their accumulators (rows x 2 vectors), the two vectors they
// multiply and a broadcast in registers: 12 with 32 registers, 6 with AVX2's 16, 4 with SSE4.
constexpr int kGemmRows = kAccumulators / kGemmTokenVectors;
// Vectors of o per row in the value loop (the same accumulators as the scores').
constexpr int kGemmValueVectors = 2;

// s[r * kBlock + t] = q_r . k_t for R rows (q_r at q + r * d) and the tile's columns.
template <int R>
HWY_INLINE void gemm_scores(const float* HWY_RESTRICT q, std::int32_t d, const GemmTile& tile,
                            float* HWY_RESTRICT s) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  for (std::int32_t j = 0; j < tile.columns; j += kGemmTokenStep) {
    VF acc[R * 2];
    for (int a = 0; a < R * 2; ++a) acc[a] = hn::Zero(df);
    const float* kt = tile.kt + j;
    for (std::int32_t i = 0; i < d; ++i) {
      const VF k0 = hn::Load(df, kt + i * kBlock);
      const VF k1 = hn::Load(df, kt + i * kBlock + n);
      for (int r = 0; r < R; ++r) {
        const VF b = hn::Set(df, q[r * d + i]);
        acc[r * 2] = hn::MulAdd(b, k0, acc[r * 2]);
        acc[r * 2 + 1] = hn::MulAdd(b, k1, acc[r * 2 + 1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      hn::Store(acc[r * 2], df, s + r * kBlock + j);
      hn::Store(acc[r * 2 + 1], df, s + r * kBlock + j + n);
    }
  }
}

// o[r][i, i + C vectors) = o x rescale[r] + sum_t P[r][t] v_t for R rows (o_r at o + r * dv).
template <int R, int C>
HWY_INLINE void gemm_values_chunk(const float* HWY_RESTRICT p, const GemmTile& tile,
                                  std::int32_t dv, std::int32_t i, const float* rescale,
                                  float* HWY_RESTRICT o) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  VF acc[R * C];
  for (int r = 0; r < R; ++r) {
    const VF sc = hn::Set(df, rescale[r]);
    for (int c = 0; c < C; ++c) acc[r * C + c] = hn::Mul(sc, hn::LoadU(df, o + r * dv + i + c * n));
  }
  const float* vw = tile.vw + i;
  for (std::int32_t t = 0; t < tile.tokens; ++t) {
    VF v[C];
    for (int c = 0; c < C; ++c) v[c] = hn::Load(df, vw + t * dv + c * n);
    for (int r = 0; r < R; ++r) {
      const VF b = hn::Set(df, p[r * kBlock + t]);
      for (int c = 0; c < C; ++c) acc[r * C + c] = hn::MulAdd(b, v[c], acc[r * C + c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) hn::StoreU(acc[r * C + c], df, o + r * dv + i + c * n);
  }
}

// Every column of o for R rows: chunks of kGemmValueVectors vectors, then one of 1 (a head of an
// odd number of vectors: 48 or 16 values on AVX-512).
template <int R>
HWY_INLINE void gemm_values(const float* p, const GemmTile& tile, std::int32_t dv,
                            const float* rescale, float* o) {
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(DF()));
  constexpr int C = kGemmValueVectors;
  std::int32_t i = 0;
  for (; i + C * n <= dv; i += C * n) gemm_values_chunk<R, C>(p, tile, dv, i, rescale, o);
  if (i < dv) gemm_values_chunk<R, 1>(p, tile, dv, i, rescale, o);
}

// Whether rows r0 .. r0 + R - 1 see none of the keys [t0, t0 + tokens) and a block of -inf scores
// would leave their state as it is (a running max below +inf: not +inf, not NaN).
HWY_INLINE bool rows_hidden(const ScoreRules& rules, std::int32_t r0, std::int32_t R,
                            std::int64_t t0, std::int32_t tokens, const float* m) {
  for (std::int32_t r = r0; r < r0 + R; ++r) {
    const bool sees = rules.key_begin[r] < t0 + tokens && rules.key_end[r] > t0;
    if (sees || !(m[r] < std::numeric_limits<float>::infinity())) return false;
  }
  return true;
}

// One block of R rows from row r0 on over the tile (keys t0 on): scores, weights, values.
template <int R>
HWY_INLINE void gemm_row_block(const SegmentJob& job, const GemmTile& tile, const ScoreRules* rules,
                               float cap, std::int32_t r0, std::int64_t t0, const float* kscale,
                               const float* vscale) {
  if (rules != nullptr && rows_hidden(*rules, r0, R, t0, tile.tokens, job.m)) return;
  const std::int32_t d = job.head_dim, dv = job.head_dim_v;
  HWY_ALIGN float s[R * kBlock];
  gemm_scores<R>(job.q + static_cast<std::ptrdiff_t>(r0) * d, d, tile, s);
  float rescale[R];
  for (int r = 0; r < R; ++r) {
    scores_to_weights<1>(s + r * kBlock, tile.tokens, kscale, vscale, cap, rules, r0 + r, t0,
                         job.m + r0 + r, job.l + r0 + r, rescale + r);
  }
  gemm_values<R>(s, tile, dv, rescale, job.o + static_cast<std::ptrdiff_t>(r0) * dv);
}

// Row block r0 (R rows) over every tile of a sweep, in key order: tile b holds keys
// t0 + b x kBlock on, its 8-bit scales at kscale / vscale + b x kBlock (null: none).
template <int R>
HWY_NOINLINE void gemm_row_sweep(const SegmentJob& job, const GemmTile* tiles, std::int32_t n,
                                 const ScoreRules* rules, float cap, std::int32_t r0,
                                 std::int64_t t0, const float* kscale, const float* vscale) {
  for (std::int32_t b = 0; b < n; ++b) {
    const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(b) * kBlock;
    gemm_row_block<R>(job, tiles[b], rules, cap, r0, t0 + at, kscale ? kscale + at : nullptr,
                      vscale ? vscale + at : nullptr);
  }
}

// gemm_row_sweep<rows> for 1 <= rows <= R, chosen at run time (the rows left after whole blocks).
template <int R, class... Args>
HWY_INLINE void gemm_row_sweep_of(std::int32_t rows, Args&&... args) {
  if constexpr (R > 1) {
    if (rows < R) return gemm_row_sweep_of<R - 1>(rows, args...);
  }
  gemm_row_sweep<R>(args...);
}

// Every row of the job over a sweep of n widened blocks (keys t0 on): rows outer, so each row
// block's q and o stay in L1 over the sweep's keys. Each row's blocks run in key order, as with
// one block per sweep (the same arithmetic, bit for bit). kscale / vscale: an 8-bit cache's
// per-token factors, kBlock per block (null otherwise); rules without the soft-cap, and the cap
// (KernelRules).
HWY_NOINLINE void gemm_sweep(const SegmentJob& job, const GemmTile* tiles, std::int32_t n,
                             const ScoreRules* rules, float cap, std::int64_t t0,
                             const float* kscale, const float* vscale) {
  std::int32_t r0 = 0;
  for (; r0 + kGemmRows <= job.rows; r0 += kGemmRows) {
    gemm_row_sweep<kGemmRows>(job, tiles, n, rules, cap, r0, t0, kscale, vscale);
  }
  if (r0 < job.rows) {
    gemm_row_sweep_of<kGemmRows - 1>(job.rows - r0, job, tiles, n, rules, cap, r0, t0, kscale,
                                     vscale);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_GEMM_ROWS_INL_HPP_
