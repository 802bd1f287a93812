// The CPU engine's inner loop, written once with Google Highway and compiled for every SIMD
// target (foreach_target re-includes this file once per target; see segment_kernel.hpp).
//
// A segment is processed in blocks of kBlock tokens. For each block and each pass of R query
// rows (R a power of two, chosen so that R rows' accumulators fit the register file):
//   1. scores  S[t][r] = q_r . k_t             (qk_block: R x U dot products at once, reduced
//                                                four at a time by a transpose tree)
//   2. the variants' rules (the soft-cap vectorised, then masks and ALiBi: score_rules.hpp),
//      softmax m, l update and P = exp(S - m)  (softmax_block, the state header's rules)
//   3. values  o_r = o_r * rescale_r + sum_t P[t][r] v_t   (pv_block: R rows x C vectors of o
//                                                          stay in registers over the block)
// K and V rows are converted to f32 in registers (kv_row_load-inl.hpp); an 8-bit cache's scales
// multiply the scores (K) and the weights (V), a float per token. The layout of S and P is
// [token][row], so one block of K (or V) is read from L1 once per pass of R rows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/segment_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "cpu/kv_row_load-inl.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu/kv_elements.hpp"
#include "cpu/row_walk.hpp"
#include "cpu/segment_kernel.hpp"
#include "leanattn/core/softmax_state.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f16 -> f32 by one instruction (F16C with AVX2, AVX-512); SSE4 and the fallbacks convert with
// integer operations (f16_bits_to_f32 below).
constexpr bool kF16Instruction = HWY_TARGET < HWY_SSE4;
// Floats per vector (the x86 targets have fixed widths).
constexpr auto kF32Lanes = static_cast<std::int32_t>(hn::MaxLanes(hn::ScalableTag<float>()));

#if HWY_TARGET == HWY_SCALAR
// The portable fallback (Highway's HWY_SCALAR target, used where no SIMD target is supported):
// the same algorithm one token and one row at a time, with the state header's scalar rules.
template <class KvT>
void compute_typed(const SegmentJob& job) {
  constexpr int kBlock = 32;
  const auto* kbase = static_cast<const KvT*>(job.k_cache);
  const auto* vbase = static_cast<const KvT*>(job.v_cache);
  const std::int32_t d = job.head_dim;
  float s[kBlock], p[kBlock], ks[kBlock], vs[kBlock];
  std::fill(ks, ks + kBlock, 1.0f);
  std::fill(vs, vs + kBlock, 1.0f);
  for (std::int64_t t0 = job.token_begin; t0 < job.token_end; t0 += kBlock) {
    const auto n = static_cast<int>(std::min<std::int64_t>(kBlock, job.token_end - t0));
    if constexpr (kScaledKv<KvT>) {  // element_to_float is the full value: no load factor
      block_scales<float>(job.k_scale, job.k_scale_at, job.request, t0, job.kv_head, n, ks);
      block_scales<float>(job.v_scale, job.v_scale_at, job.request, t0, job.kv_head, n, vs);
    }
    for (std::int32_t r = 0; r < job.rows; ++r) {
      const float* q = job.q + static_cast<std::ptrdiff_t>(r) * d;
      for (int j = 0; j < n; ++j) {
        const KvT* k = kbase + job.k.row(job.request, t0 + j, job.kv_head);
        float dot = 0.0f;
        for (std::int32_t i = 0; i < d; ++i) dot += q[i] * element_to_float(k[i]);
        s[j] = dot * ks[j];
      }
      if (job.rules != nullptr) apply_score_rules(*job.rules, r, 1, t0, n, s);
      SoftmaxStats<float> st{job.m[r], job.l[r]};
      const float rescale = update_with_block(st, s, p, n);
      job.m[r] = st.m;
      job.l[r] = st.l;
      float* o = job.o + static_cast<std::ptrdiff_t>(r) * d;
      for (std::int32_t i = 0; i < d; ++i) o[i] *= rescale;
      for (int j = 0; j < n; ++j) {
        const KvT* v = vbase + job.v.row(job.request, t0 + j, job.kv_head);
        for (std::int32_t i = 0; i < d; ++i) o[i] += p[j] * vs[j] * element_to_float(v[i]);
      }
    }
  }
}

#else  // SIMD targets

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Vector registers the loops may plan with: 32 with AVX-512 (HWY_AVX3 and every better x86
// target: AVX3_DL, and AVX3_ZEN4 / AVX3_SPR of newer Highway versions, whose bits are lower), 16
// with AVX2 (and elsewhere); SSE4 counts 12 of its 16, since its f16 conversion is a dozen integer
// operations with temporaries of their own.
constexpr int kRegisters = (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) ? 32
                           : HWY_TARGET == HWY_SSE4                 ? 12
                                                                    : 16;
// Accumulators a loop keeps for R query rows: up to 3/4 of the registers (12 of 16 with AVX2),
// as long as the accumulators, the vectors they multiply (one per token or column of a step)
// and one more still fit, which the compiler otherwise spills. 12 independent FMA chains hide
// the 4-cycle FMA latency at 2 FMAs per cycle with slack, which 8 do not (measured on Zen 3, 4
// rows: about 5 cycles per token and KV head saved in each loop).
constexpr int kAccumulators = 3 * kRegisters / 4;
// Tokens per score step: R x U accumulators (a multiple of 4, for the reduction tree), U K
// vectors and a q vector in registers, and U row pointers in general registers (16, a few taken
// by the loop): with R = 1 at most 8, since each K vector feeds one FMA and 16 tokens spilled 8
// row pointers and a vector in the AVX-512 loop (reloaded for every column vector).
// AVX2: U = 8, 4, 3 for R = 1, 2, 4; AVX-512: 8, 8, 6, 3 for R = 1, 2, 4, 8; SSE4: 4, 2, 2.
template <int R>
constexpr int score_tokens() {
  if (R == 1) return std::min(8, kRegisters / 8 * 4);
  for (int u = kAccumulators / R; u > 1; --u) {
    if (R * u % 4 == 0 && R * u + u + 1 <= kRegisters) return u;
  }
  return 4 / R > 0 ? 4 / R : 1;
}
// Vectors of o per row in a value chunk: R x C accumulators, C V vectors and a broadcast in
// registers, at most 8. AVX2: C = 7, 5, 3 for R = 1, 2, 4; AVX-512: 8, 8, 6, 3; SSE4: 5, 3, 2.
template <int R>
constexpr int value_vectors() {
  return std::min({8, kAccumulators / R, (kRegisters - 1) / (R + 1)});
}
constexpr int kBlock = kKernelBlockTokens;  // tokens per block
constexpr int kRowsPadded = kKernelRowsPadded;
constexpr int kMaxRows = 16;  // bound for buffers sized by rows per pass
// Row arrays and S hold a block padded to U tokens.
static_assert((kBlock + score_tokens<1>() - 1) / score_tokens<1>() * score_tokens<1>() <=
              kRowsPadded);

// exp(x) with NaN kept (Highway's Exp maps NaN to 0; the NaN rule needs it to reach l).
HWY_INLINE VF exp_keep_nan(DF df, VF x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(df, x));
}

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

HWY_INLINE void store_sums4(DF df, VF a, VF b, VF c, VF d, float* HWY_RESTRICT dst) {
  const VF ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  const VF cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  const hn::Repartition<uint64_t, DF> du;
  const auto ab64 = hn::BitCast(du, ab);
  const auto cd64 = hn::BitCast(du, cd);
  const VF sum = hn::Add(hn::BitCast(df, hn::InterleaveLower(du, ab64, cd64)),
                         hn::BitCast(df, hn::InterleaveUpper(du, ab64, cd64)));
  store_fold(df, sum, dst);
}

// Prefetches `lines` cache lines from p + 64 x first on (hint T0; on Zen 3, T0, T1 and NTA
// measured alike). Prefetches never fault, so the engine may repeat or overshoot addresses.
HWY_INLINE void prefetch_lines(const char* p, std::int32_t first, std::int32_t lines) {
  p += first * 64;
  for (std::int32_t i = 0; i < lines; ++i) __builtin_prefetch(p + i * 64, 0, 3);
}

// S[t * R + r] = q[r] . k[t] for t in [0, tokens_padded), tokens_padded a multiple of U.
// q: [R, d] float; krow[t]: the K row of token t. With token t it prefetches `prefetch_count`
// lines from prefetch[t].

template <int R, class KvT>
HWY_NOINLINE void qk_block(const float* HWY_RESTRICT q, const KvT* const* krow,
                           std::int32_t tokens_padded, std::int32_t d, float* HWY_RESTRICT s,
                           const char* const* prefetch, std::int32_t prefetch_count) {
  constexpr int U = score_tokens<R>();
  static_assert(R * U % 4 == 0);
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
      for (int u = 0; u < U; ++u) k[u] = load_row(df, krow[t + u] + i);
      for (int r = 0; r < R; ++r) {
        const VF qv = hn::LoadU(df, q + r * d + i);
        for (int u = 0; u < U; ++u) acc[u * R + r] = hn::MulAdd(qv, k[u], acc[u * R + r]);
      }
    }
    for (int a = 0; a < R * U; a += 4) {
      store_sums4(df, acc[a], acc[a + 1], acc[a + 2], acc[a + 3], s + t * R + a);
    }
  }
}

// Folds the lanes of v onto its first R lanes (lane i onto lane i % R, by halving) with max or
// add, and stores those R lanes to out.
template <int R, bool kMax, class D>
HWY_INLINE void fold_store(D d, hn::Vec<D> v, float* HWY_RESTRICT out) {
  if constexpr (hn::MaxLanes(D()) > R) {
    const hn::Half<D> dh;
    const auto lo = hn::LowerHalf(dh, v);
    const auto hi = hn::UpperHalf(dh, v);
    fold_store<R, kMax>(dh, kMax ? hn::Max(lo, hi) : hn::Add(lo, hi), out);
  } else {
    hn::StoreU(v, d, out);
  }
}

// Per-row reduction (max or sum) of S[t * R + r] over t, for `count` = tokens * R entries padded
// to a multiple of max(R, lanes) with neutral values. out[r] for r < R.
template <int R, bool kMax>
HWY_INLINE void reduce_rows(const float* HWY_RESTRICT s, std::int32_t count, float* out) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const float neutral = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  if (R < n) {  // one vector per period: fold it in registers
    VF acc = hn::Set(df, neutral);
    for (std::int32_t c = 0; c < count; c += n) {
      const VF x = hn::LoadU(df, s + c);
      acc = kMax ? hn::Max(acc, x) : hn::Add(acc, x);
    }
    fold_store<R, kMax>(df, acc, out);
    return;
  }
  VF acc[kMaxRows / 4];  // R / n <= kMaxRows / 4 since n >= 4
  const std::int32_t vecs = R / n;
  for (std::int32_t j = 0; j < vecs; ++j) acc[j] = hn::Set(df, neutral);
  for (std::int32_t c = 0; c < count; c += R) {
    for (std::int32_t j = 0; j < vecs; ++j) {
      const VF x = hn::LoadU(df, s + c + j * n);
      acc[j] = kMax ? hn::Max(acc[j], x) : hn::Add(acc[j], x);
    }
  }
  for (std::int32_t j = 0; j < vecs; ++j) hn::StoreU(acc[j], df, out + j * n);
}

// s[i] = cap * tanh(s[i] / cap) for i < count rounded up to whole vectors (the rows' padding
// past count is overwritten after): the soft-cap of a block's scores, vectorised (Highway's Tanh,
// 4 ulp). A tanhf per score in the per-score rules (score_rules.hpp) made a Gemma-2-shaped decode
// 23-51% slower than plain attention (bench/results/softcap-cpu-ab-*).
HWY_INLINE void softcap_block(float* HWY_RESTRICT s, std::int32_t count, float cap) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const VF c = hn::Set(df, cap);
  // s / cap as the rules define it: 1 / cap would overflow for a subnormal cap.
  for (std::int32_t i = 0; i < count; i += n) {
    const VF x = hn::Load(df, s + i);
    hn::Store(hn::Mul(c, hn::Tanh(df, hn::Div(x, c))), df, s + i);
  }
}

// Online-softmax step for R rows over a block: turns S into P in place and updates m, l. Returns
// the per-row rescale factors of o in `rescale`. `count` = padded entries (see reduce_rows).
template <int R>
HWY_INLINE void softmax_block(float* HWY_RESTRICT s, std::int32_t count, float* m, float* l,
                              float* rescale) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const std::int32_t period = std::max<std::int32_t>(R, n);
  float block_max[R];
  reduce_rows<R, true>(s, count, block_max);
  HWY_ALIGN float shift[16];  // one period: max(R, lanes) <= 16
  for (int r = 0; r < R; ++r) {
    const float m_new = std::max(m[r], block_max[r]);
    rescale[r] = rescale_factor(m[r], m_new);
    m[r] = m_new;
  }
  float row_shift[R];
  for (int r = 0; r < R; ++r) row_shift[r] = exp_shift(m[r]);
  for (std::int32_t i = 0; i < period; ++i) shift[i] = row_shift[i % R];
  for (std::int32_t c = 0; c < count; c += period) {
    for (std::int32_t j = 0; j < period; j += n) {
      const VF x = hn::Sub(hn::LoadU(df, s + c + j), hn::Load(df, shift + j));
      hn::StoreU(exp_keep_nan(df, x), df, s + c + j);
    }
  }
  float block_sum[R];
  reduce_rows<R, false>(s, count, block_sum);
  for (int r = 0; r < R; ++r) l[r] = l[r] * rescale[r] + block_sum[r];
}

// o[r] = o[r] * rescale[r] + sum_t P[t * R + r] v_t for the R rows, tokens t < tokens, over the
// columns [i0, i1) of d (a multiple of C vectors; chunk0 = chunks of d before i0). R x C
// accumulators stay in registers over the tokens. The `prefetch_count` lines from prefetch[t] are
// spread over the chunks of d.
template <int R, int C, class KvT>
HWY_NOINLINE void pv_block(const float* HWY_RESTRICT p, const KvT* const* vrow, std::int32_t tokens,
                           std::int32_t d, std::int32_t i0, std::int32_t i1, std::int32_t chunk0,
                           const float* rescale, float* HWY_RESTRICT o, const char* const* prefetch,
                           std::int32_t prefetch_count) {
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
      for (int c = 0; c < C; ++c) v[c] = load_row(df, vrow[t] + i + c * n);
      for (int r = 0; r < R; ++r) {
        const VF pr = hn::Set(df, p[t * R + r]);
        for (int c = 0; c < C; ++c) acc[r * C + c] = hn::MulAdd(pr, v[c], acc[r * C + c]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) hn::StoreU(acc[r * C + c], df, o + r * d + i + c * n);
    }
  }
}

// Columns of d in chunks of C = value_vectors<R>() vectors, with the rest in
// chunks of 2 and at most one of 1: a chunk of 1 keeps only R accumulators in flight, too few to
// hide the FMA latency, so with C = 3 and 16 vectors this does 3+3+3+3+2+2, not 3+3+3+3+3+1.
template <int R, class KvT>
HWY_INLINE void pv_dispatch(const float* p, const KvT* const* vrow, std::int32_t tokens,
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
  const std::int32_t i2 = kC > 2 ? i1 + (d - i1) / (2 * n) * (2 * n) : i1;
  if (i1 > 0) pv_block<R, kC>(p, vrow, tokens, d, 0, i1, 0, rescale, o, prefetch, prefetch_count);
  if (i2 > i1)
    pv_block<R, 2>(p, vrow, tokens, d, i1, i2, wide, rescale, o, prefetch, prefetch_count);
  if (d > i2)
    pv_block<R, 1>(p, vrow, tokens, d, i2, d, wide + (i2 - i1) / (2 * n), rescale, o, prefetch,
                   prefetch_count);
}

// One pass of R rows (starting at row r0) over one block of `tokens` K/V rows (keys t0 on).
// `rules`: the job's rules less the soft-cap (null for plain attention); `cap`: the soft-cap
// (0: off).
template <int R, class KvT>
HWY_INLINE void rows_pass(const SegmentJob& job, const ScoreRules* rules, float cap,
                          std::int32_t r0, std::int64_t t0, const KvT* const* krow,
                          const KvT* const* vrow, std::int32_t tokens, const float* kscale,
                          const float* vscale, const char* const* prefetch_k,
                          const char* const* prefetch_v, std::int32_t prefetch_count) {
  constexpr int U = score_tokens<R>();
  const std::int32_t d = job.head_dim;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(DF()));
  const std::int32_t padded_tokens = (tokens + U - 1) / U * U;
  const std::int32_t period = std::max<std::int32_t>(R, n);
  const std::int32_t count = (tokens * R + period - 1) / period * period;
  HWY_ALIGN float s[kRowsPadded * kMaxRows + 64];
  qk_block<R>(job.q + r0 * d, krow, padded_tokens, d, s, prefetch_k, prefetch_count);
  if constexpr (kScaledKv<KvT>) scale_token_rows<R>(s, kscale, tokens);
  if (cap > 0.0f) softcap_block(s, tokens * R, cap);
  if (rules != nullptr) apply_score_rules(*rules, r0, R, t0, tokens, s);
  for (std::int32_t i = tokens * R; i < count; ++i) s[i] = -std::numeric_limits<float>::infinity();
  float rescale[R];
  softmax_block<R>(s, count, job.m + r0, job.l + r0, rescale);
  if constexpr (kScaledKv<KvT>) scale_token_rows<R>(s, vscale, tokens);
  pv_dispatch<R>(s, vrow, tokens, d, rescale, job.o + r0 * d, prefetch_v, prefetch_count);
}

// rows[j] = the row of token t0 + j of `head` for j < count, then the last row repeated up to
// `fill`; without a multiply (contiguous) or a division (paged) per row.
template <class T>
HWY_INLINE void fill_rows(const KvAddressing& a, const T* base, std::int32_t request,
                          std::int64_t t0, std::int32_t head, std::int32_t count, std::int32_t fill,
                          const T** rows) {
  if (a.page_size == 0) {
    const T* first = base + a.row(request, t0, head);
    for (std::int32_t j = 0; j < count; ++j) rows[j] = first + j * a.token_stride;
  } else {
    RowWalk walk(a, request, t0, head);
    for (std::int32_t j = 0; j < count; ++j, walk.next()) rows[j] = base + walk.offset();
  }
  for (std::int32_t j = count; j < fill; ++j) rows[j] = rows[count - 1];
}

template <class KvT>
void compute_typed(const SegmentJob& job) {
  const auto* kbase = static_cast<const KvT*>(job.k_cache);
  const auto* vbase = static_cast<const KvT*>(job.v_cache);
  const KvT* krow[kRowsPadded];
  const KvT* vrow[kRowsPadded];
  static const char* const kNoRows[kRowsPadded] = {};
  // The soft-cap is applied per block by softcap_block, the other rules (masks, ALiBi) by
  // apply_score_rules, after it.
  ScoreRules rest;
  const ScoreRules* rules = nullptr;
  float cap = 0.0f;
  if (job.rules != nullptr) {
    rest = *job.rules;
    cap = rest.softcap;
    rest.softcap = 0.0f;
    rules = &rest;
  }
  for (std::int64_t t0 = job.token_begin; t0 < job.token_end; t0 += kBlock) {
    const auto tokens =
        static_cast<std::int32_t>(std::min<std::int64_t>(kBlock, job.token_end - t0));
    fill_rows(job.k, kbase, job.request, t0, job.kv_head, tokens, kRowsPadded, krow);
    fill_rows(job.v, vbase, job.request, t0, job.kv_head, tokens, tokens, vrow);
    HWY_ALIGN float ks[kBlock], vs[kBlock];
    if constexpr (kScaledKv<KvT>) {
      block_scales<KvT>(job.k_scale, job.k_scale_at, job.request, t0, job.kv_head, tokens, ks);
      block_scales<KvT>(job.v_scale, job.v_scale_at, job.request, t0, job.kv_head, tokens, vs);
    }
    // The engine hands out one block per call and names what to prefetch with it; a longer range
    // prefetches only with its last block.
    const std::int32_t lines = t0 + kBlock >= job.token_end ? job.prefetch_lines : 0;
    const char* const* pk = lines > 0 ? job.prefetch_k : kNoRows;
    const char* const* pv = lines > 0 ? job.prefetch_v : kNoRows;
    // Passes of R rows: R = 4 at most with 16 registers, 8 with 32, which
    // keeps a broadcast per two FMAs in pv_block; wider passes read K and V once but spend more
    // on broadcasts and reductions than they save (measured: 8 rows in one AVX2 pass cost 1.8x
    // two passes of 4).
    std::int32_t r0 = 0;
    while (r0 < job.rows) {
      const std::int32_t left = job.rows - r0;
      if (kRegisters >= 32 && left >= 8) {
        rows_pass<8>(job, rules, cap, r0, t0, krow, vrow, tokens, ks, vs, pk, pv,
                     r0 == 0 ? lines : 0);
        r0 += 8;
      } else if (left >= 4) {
        rows_pass<4>(job, rules, cap, r0, t0, krow, vrow, tokens, ks, vs, pk, pv,
                     r0 == 0 ? lines : 0);
        r0 += 4;
      } else if (left >= 2) {
        rows_pass<2>(job, rules, cap, r0, t0, krow, vrow, tokens, ks, vs, pk, pv,
                     r0 == 0 ? lines : 0);
        r0 += 2;
      } else {
        rows_pass<1>(job, rules, cap, r0, t0, krow, vrow, tokens, ks, vs, pk, pv,
                     r0 == 0 ? lines : 0);
        r0 += 1;
      }
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

void compute_segment(const SegmentJob& job) {
  switch (job.kv_dtype) {
    case DType::f32:
      return compute_typed<float>(job);
    case DType::f16:
      return compute_typed<hwy::float16_t>(job);
    case DType::bf16:
      return compute_typed<hwy::bfloat16_t>(job);
    case DType::fp8_e4m3:
      return compute_typed<Fp8E4m3>(job);
    case DType::fp8_e5m2:
      return compute_typed<Fp8E5m2>(job);
    case DType::int8:
      return compute_typed<std::int8_t>(job);
  }
}

// Registers this target's kernel when the program starts.
[[maybe_unused]] static const int kRegistered = register_simd_kernel(
    {hwy::TargetName(HWY_TARGET), HWY_TARGET, &compute_segment, kF32Lanes, kF16Instruction});

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
// The registry lives in this file so that linking the engine pulls in every target's kernel.
#include <hwy/targets.h>

#include <string>

#include "leanattn/error.hpp"

namespace leanattn::cpu {

namespace {
std::vector<SimdKernel>& registry() {
  static std::vector<SimdKernel> kernels;
  return kernels;
}
}  // namespace

int register_simd_kernel(const SimdKernel& kernel) {
  registry().push_back(kernel);
  return 0;
}

std::vector<SimdKernel> supported_simd_kernels() {
  std::vector<SimdKernel> out;
  const std::int64_t supported = hwy::SupportedTargets();
  for (const SimdKernel& k : registry()) {
    if (supported & k.target) out.push_back(k);
  }
  std::sort(out.begin(), out.end(),
            [](const SimdKernel& a, const SimdKernel& b) { return a.target < b.target; });
  return out;
}

SimdKernel find_simd_kernel(std::string_view name) {
  const std::vector<SimdKernel> kernels = supported_simd_kernels();
  if (kernels.empty()) throw Error("simd", "no SIMD kernel was compiled for this CPU");
  if (name.empty()) return kernels.front();
  std::string names;
  for (const SimdKernel& k : kernels) {
    if (k.name == name) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw Error("simd", "must be one of the targets compiled and supported here (" + names +
                          ") (got '" + std::string(name) + "')");
}

}  // namespace leanattn::cpu
#endif  // HWY_ONCE
