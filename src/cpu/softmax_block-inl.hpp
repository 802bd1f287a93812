// The tiled kernel's online softmax of a block of scores, per Highway target (segment_kernel.cpp
// includes it after foreach_target.h): the soft-cap (every target, the row kernel's included: the
// one place it is applied in the CPU kernel), the per-row block max and sum folded in registers,
// the rescale of the running state by the state header's rules, and P = exp(S - m) vectorised;
// scores_to_weights, everything between a pass's two products (the tiled kernel's and, row by row,
// the many-rows path's).
#if defined(LEANATTN_CPU_SOFTMAX_BLOCK_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_SOFTMAX_BLOCK_INL_HPP_
#undef LEANATTN_CPU_SOFTMAX_BLOCK_INL_HPP_
#else
#define LEANATTN_CPU_SOFTMAX_BLOCK_INL_HPP_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "cpu/kernel_shape-inl.hpp"
#include "cpu/kv_row_load-inl.hpp"
#include "cpu/score_rules.hpp"
#include "leanattn/core/softmax_state.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// s[i] = cap * tanh(s[i] / cap) for i < count rounded up to whole vectors (the rows' padding
// past count is overwritten after): the soft-cap of a block's scores, vectorised (Highway's Tanh,
// 4 ulp). A tanhf per score in the per-score rules (score_rules.hpp) made a Gemma-2-shaped decode
// 23-51% slower than plain attention (bench/results/softcap-cpu-ab-*).
HWY_INLINE void softcap_block(float* HWY_RESTRICT s, std::int32_t count, float cap) {
  const hn::ScalableTag<float> df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const auto c = hn::Set(df, cap);
  // s / cap as the rules define it: 1 / cap would overflow for a subnormal cap.
  for (std::int32_t i = 0; i < count; i += n) {
    const auto x = hn::Load(df, s + i);
    hn::Store(hn::Mul(c, hn::Tanh(df, hn::Div(x, c))), df, s + i);
  }
}

// The tiled kernel's (SCALAR and the scalable-vector targets run row_kernel-inl.hpp).
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// exp(x) with NaN kept (Highway's Exp maps NaN to 0; the NaN rule needs it to reach l).
HWY_INLINE VF exp_keep_nan(DF df, VF x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(df, x));
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

// Online-softmax step for R rows over a block of S[t * stride + r] (stride = score_stride<R>()):
// turns S into P in place and updates m, l. Returns the per-row rescale factors of o in
// `rescale`. `count` = padded entries (see reduce_rows). The padding rows r >= R are shifted by
// +inf, so their P is 0.
template <int R>
HWY_INLINE void softmax_block(float* HWY_RESTRICT s, std::int32_t count, float* m, float* l,
                              float* rescale) {
  constexpr int S = score_stride<R>();
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  const std::int32_t period = std::max<std::int32_t>(S, n);
  float block_max[S];
  reduce_rows<S, true>(s, count, block_max);
  HWY_ALIGN float shift[16];  // one period: max(stride, lanes) <= 16
  for (int r = 0; r < R; ++r) {
    const float m_new = std::max(m[r], block_max[r]);
    rescale[r] = rescale_factor(m[r], m_new);
    m[r] = m_new;
  }
  float row_shift[S];
  for (int r = 0; r < S; ++r)
    row_shift[r] = r < R ? exp_shift(m[r]) : std::numeric_limits<float>::infinity();
  for (std::int32_t i = 0; i < period; ++i) shift[i] = row_shift[i % S];
  for (std::int32_t c = 0; c < count; c += period) {
    for (std::int32_t j = 0; j < period; j += n) {
      const VF x = hn::Sub(hn::LoadU(df, s + c + j), hn::Load(df, shift + j));
      hn::StoreU(exp_keep_nan(df, x), df, s + c + j);
    }
  }
  float block_sum[S];
  reduce_rows<S, false>(s, count, block_sum);
  for (int r = 0; r < R; ++r) l[r] = l[r] * rescale[r] + block_sum[r];
}

#if HWY_TARGET != HWY_SCALAR
// Row r's rules over a block of that row's scores alone (stride 1: the many-rows path, passes of
// one row): the keys outside its range -inf, the caller's bias (f32, f16, bf16) added by vectors,
// with the same sums as apply_score_rules' scalar loop (which cost a conversion and a branch per
// score: 2x the node of a llama.cpp prompt, whose mask is the bias). False with ALiBi: the scalar
// rules then.
HWY_INLINE bool apply_row_rules(const ScoreRules& rules, std::int32_t r, std::int64_t t0,
                                std::int32_t tokens, float* HWY_RESTRICT s) {
  if (rules.slope != nullptr) return false;
  const std::int64_t b = std::clamp<std::int64_t>(rules.key_begin[r] - t0, 0, tokens);
  const std::int64_t e = std::clamp<std::int64_t>(rules.key_end[r] - t0, b, tokens);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (std::int64_t t = 0; t < b; ++t) s[t] = neg_inf;
  for (std::int64_t t = e; t < tokens; ++t) s[t] = neg_inf;
  if (rules.bias == nullptr) return true;
  const DF df;
  const std::int64_t n = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t t = b;
  auto add = [&](const auto* bias) {  // bias at key t0
    for (; t + n <= e; t += n) {
      hn::StoreU(hn::Add(hn::LoadU(df, s + t), load_row(df, bias + t)), df, s + t);
    }
  };
  const void* row = rules.bias[r];
  switch (rules.bias_dtype) {
    case DType::f16:
      add(static_cast<const hwy::float16_t*>(row) + t0);
      break;
    case DType::bf16:
      add(static_cast<const hwy::bfloat16_t*>(row) + t0);
      break;
    default:
      add(static_cast<const float*>(row) + t0);
      break;
  }
  for (; t < e; ++t) s[t] += bias_at(row, rules.bias_dtype, t0 + t);
  return true;
}
#endif

// Between the two products of a pass of R rows: the K scales of an 8-bit cache (kscale, null
// otherwise), the soft-cap (cap, 0: off), the rules (null for plain attention), the padding, the
// softmax (m, l updated, rescale out) and the V scales (vscale): S becomes P in place.
template <int R>
HWY_INLINE void scores_to_weights(float* HWY_RESTRICT s, std::int32_t tokens, const float* kscale,
                                  const float* vscale, float cap, const ScoreRules* rules,
                                  std::int32_t r0, std::int64_t t0, float* m, float* l,
                                  float* rescale) {
  constexpr int S = score_stride<R>();
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(DF()));
  const std::int32_t period = std::max<std::int32_t>(S, n);
  const std::int32_t count = (tokens * S + period - 1) / period * period;
  if (kscale != nullptr) scale_token_rows<R, S>(s, kscale, tokens);
  if (cap > 0.0f) softcap_block(s, tokens * S, cap);
#if HWY_TARGET != HWY_SCALAR
  if constexpr (S == 1) {
    if (rules != nullptr && !apply_row_rules(*rules, r0, t0, tokens, s)) {
      apply_score_rules(*rules, r0, R, S, t0, tokens, s);
    }
  } else if (rules != nullptr) {
    apply_score_rules(*rules, r0, R, S, t0, tokens, s);
  }
#else
  if (rules != nullptr) apply_score_rules(*rules, r0, R, S, t0, tokens, s);
#endif
  for (std::int32_t i = tokens * S; i < count; ++i) s[i] = -std::numeric_limits<float>::infinity();
  softmax_block<R>(s, count, m, l, rescale);
  if (vscale != nullptr) scale_token_rows<R, S>(s, vscale, tokens);
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_SOFTMAX_BLOCK_INL_HPP_
