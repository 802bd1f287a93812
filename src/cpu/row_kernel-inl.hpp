// The CPU kernel one query row and one token at a time, for the Highway targets the tiled kernel
// (score_block, softmax_block, value_block) cannot serve: the portable SCALAR fallback, and the
// scalable-vector targets (Arm's SVE and SVE2 and their 256- and 128-bit variants), whose vector
// types are sizeless and cannot be held in the tiled loops' arrays of accumulators. The tiled
// kernel's rules (fp32 dot products and accumulation, the soft-cap and rules of every target) with
// the state header's scalar online-softmax step (update_with_block) in place of the vectorised
// one, per row:
//   s[j] = q . k_j (x the token's scale)  ->  soft-cap, rules, m, l, P  ->  o = o x rescale + sum_j
//   P[j] v_j
// On vector targets the dot product and the value update run on vectors of at most 16 floats
// (CappedTag: 4, 8 or 16 lanes at any SVE vector length, each dividing head_dim, a multiple of 16),
// K and V widened by the tiled kernel's loaders; SCALAR reads element by element. It keeps no
// prefetch (prefetch_k / prefetch_v are ignored). segment_kernel.cpp includes it after
// foreach_target.h.
#if defined(LEANATTN_CPU_ROW_KERNEL_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_ROW_KERNEL_INL_HPP_
#undef LEANATTN_CPU_ROW_KERNEL_INL_HPP_
#else
#define LEANATTN_CPU_ROW_KERNEL_INL_HPP_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/kv_elements.hpp"
#include "cpu/kv_row_load-inl.hpp"
#include "cpu/row_walk.hpp"
#include "cpu/score_rules.hpp"
#include "cpu/segment_kernel.hpp"
#include "cpu/softmax_block-inl.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "problem/mutation.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

#if HWY_TARGET == HWY_SCALAR
// q . row over d values, element by element (kv_value: the full value; a block format's scale
// included).
template <class KvT>
HWY_INLINE float row_dot(const float* HWY_RESTRICT q, const KvT* row, std::int32_t d) {
  float dot = 0.0f;
  for (std::int32_t i = 0; i < d; ++i) dot += q[i] * kv_value(row, i);
  return dot;
}

// o = o x rescale over d values.
HWY_INLINE void row_rescale(float* HWY_RESTRICT o, float rescale, std::int32_t d) {
  for (std::int32_t i = 0; i < d; ++i) o[i] *= rescale;
}

// o += w x row over d values.
template <class KvT>
HWY_INLINE void row_add(float* HWY_RESTRICT o, float w, const KvT* row, std::int32_t d) {
  for (std::int32_t i = 0; i < d; ++i) o[i] += w * kv_value(row, i);
}

// The type whose kLoadFactor a token's scales (8-bit caches) take: none here, since the loads
// above return the full value.
template <class KvT>
using LoadFactorType = float;

#else  // scalable vectors

// Vectors of at most 16 floats: 4, 8 or 16 lanes at SVE's 128, 256 and >= 512 bits, each a
// divisor of head_dim (a multiple of 16), so the loops below need no tail; and at most 16 lanes
// keep load_block's values in one block (one half of it for q4_0).
using DR = hn::CappedTag<float, 16>;

// Lanes(df) values of `row` from value i on as floats (value / kLoadFactor<KvT>): a block
// format's scale read from the block that holds value i.
template <class KvT>
HWY_INLINE hn::Vec<DR> row_values(DR df, const KvT* HWY_RESTRICT row, std::int32_t i) {
  if constexpr (kBlockKv<KvT>) {
    std::uint16_t bits;
    std::memcpy(&bits,
                reinterpret_cast<const unsigned char*>(row) + i / kBlockValues * kBlockBytes<KvT>,
                2);
    return load_block(df, row, i, hn::Set(df, f16_bits_to_float(bits)));
  } else {
    return load_row(df, row + i);
  }
}

template <class KvT>
HWY_INLINE float row_dot(const float* HWY_RESTRICT q, const KvT* row, std::int32_t d) {
  const DR df;
  const auto n = static_cast<std::int32_t>(hn::Lanes(df));
  auto acc0 = hn::Zero(df);
  auto acc1 = hn::Zero(df);
  std::int32_t i = 0;
  for (; i + 2 * n <= d; i += 2 * n) {  // two chains: the FMA's latency
    acc0 = hn::MulAdd(hn::LoadU(df, q + i), row_values(df, row, i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(df, q + i + n), row_values(df, row, i + n), acc1);
  }
  if (i < d && !mutated(Mutation::row_dot_drops_odd_vector)) {
    acc0 = hn::MulAdd(hn::LoadU(df, q + i), row_values(df, row, i), acc0);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
}

HWY_INLINE void row_rescale(float* HWY_RESTRICT o, float rescale, std::int32_t d) {
  const DR df;
  const auto n = static_cast<std::int32_t>(hn::Lanes(df));
  const auto r = hn::Set(df, rescale);
  for (std::int32_t i = 0; i < d; i += n) hn::StoreU(hn::Mul(hn::LoadU(df, o + i), r), df, o + i);
}

template <class KvT>
HWY_INLINE void row_add(float* HWY_RESTRICT o, float w, const KvT* row, std::int32_t d) {
  const DR df;
  const auto n = static_cast<std::int32_t>(hn::Lanes(df));
  const auto wv = hn::Set(df, w);
  for (std::int32_t i = 0; i < d; i += n) {
    hn::StoreU(hn::MulAdd(wv, row_values(df, row, i), hn::LoadU(df, o + i)), df, o + i);
  }
}

// The type whose kLoadFactor a token's scales (8-bit caches) take: the loads above return
// value / kLoadFactor<KvT>, so the scale carries the factor.
template <class KvT>
using LoadFactorType = KvT;

#endif  // HWY_TARGET == HWY_SCALAR

// K of type KT, V of type VT: the same type, or (validate(problem)) two of f16, q8_0 and q4_0.
template <class KT, class VT>
void compute_typed(const SegmentJob& job) {
  constexpr std::int32_t kBlock = kKernelBlockTokens;
  // The soft-cap reads a block's scores in whole vectors of the target's full width (at most
  // 2048 bits: 64 floats).
  constexpr std::int32_t kScoreCapacity = kBlock + 64;
  const auto* kbase = static_cast<const KT*>(job.k_cache);
  const auto* vbase = static_cast<const VT*>(job.v_cache);
  const std::int32_t d = job.head_dim, dv = job.head_dim_v;
  const KernelRules split(job.rules);
  const KT* krow[kBlock];
  const VT* vrow[kBlock];
  HWY_ALIGN float s[kScoreCapacity] = {};
  float p[kBlock], ks[kBlock], vs[kBlock];
  std::fill(ks, ks + kBlock, 1.0f);
  std::fill(vs, vs + kBlock, 1.0f);
  for (std::int64_t t0 = job.token_begin; t0 < job.token_end; t0 += kBlock) {
    const auto n = static_cast<std::int32_t>(std::min<std::int64_t>(kBlock, job.token_end - t0));
    fill_rows(job.k, kbase, job.request, t0, job.kv_head, n, n, krow);
    fill_rows(job.v, vbase, job.request, t0, job.kv_head, n, n, vrow);
    if constexpr (kScaledKv<KT>) {  // then VT is KT
      block_scales<LoadFactorType<KT>>(job.k_scale, job.k_scale_at, job.request, t0, job.kv_head, n,
                                       ks);
      block_scales<LoadFactorType<VT>>(job.v_scale, job.v_scale_at, job.request, t0, job.kv_head, n,
                                       vs);
    }
    for (std::int32_t r = 0; r < job.rows; ++r) {
      const float* q = job.q + static_cast<std::ptrdiff_t>(r) * d;
      for (std::int32_t j = 0; j < n; ++j) s[j] = row_dot(q, krow[j], d) * ks[j];
      if (split.cap > 0.0f) softcap_block(s, n, split.cap);
      if (split.rules != nullptr) apply_score_rules(*split.rules, r, 1, 1, t0, n, s);
      SoftmaxStats<float> st{job.m[r], job.l[r]};
      const float rescale = update_with_block(st, s, p, n);
      job.m[r] = st.m;
      job.l[r] = st.l;
      float* o = job.o + static_cast<std::ptrdiff_t>(r) * dv;
      row_rescale(o, rescale, dv);
      for (std::int32_t j = 0; j < n; ++j) row_add(o, p[j] * vs[j], vrow[j], dv);
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_ROW_KERNEL_INL_HPP_
