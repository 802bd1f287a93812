// The softmax state of one query row over a set of keys, and its rules: empty state, update with
// a block of scores, merge of two states, finalize to (output, LSE). Shared by the plan
// interpreter (F = double), the CPU engine (F = float, vectorised around these scalar rules) and
// the CUDA kernels (compiled __host__ __device__ by nvcc). No CUDA or SIMD includes.
//
// For keys K with scaled scores s_j and values v_j:
//   m = max_j s_j,   l = sum_j exp(s_j - m),   o = sum_j exp(s_j - m) v_j   (o unnormalised)
//   output = o / l,  lse = m + log(l).
// Rules (docs/design.md, "the merge rule"):
//   * Empty set: m = -inf, l = 0, o = 0. finalize gives output 0 and lse = -inf.
//   * Merge with an empty state is the identity: the empty side gets weight exp(-inf - m) = 0 and
//     the other weight exp(0) = 1, so o and l come out bitwise unchanged.
//   * Two empty states merge to the empty state; -inf - (-inf) is never evaluated.
//   * NaN in a score reaches l (exp(NaN) = NaN), so output and lse of that row become NaN, as in
//     the two-pass reference; other rows are untouched.
#pragma once

#include <cmath>
#include <limits>

#include "leanattn/core/host_device.hpp"

namespace leanattn {

template <class F>
struct SoftmaxStats {
  F m;  // running max of scores; -inf when no key has been seen
  F l;  // running sum of exp(s - m); 0 when empty
};

namespace softmax_detail {
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float exp_of(float x) {
  return ::expf(x);
}
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE double exp_of(double x) {
  return ::exp(x);
}
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float log_of(float x) {
  return ::logf(x);
}
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE double log_of(double x) {
  return ::log(x);
}
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr F neg_inf() {
  return -std::numeric_limits<F>::infinity();
}
}  // namespace softmax_detail

template <class F>
LEANATTN_HOST_DEVICE constexpr SoftmaxStats<F> empty_stats() {
  return {softmax_detail::neg_inf<F>(), F(0)};
}

// The max a block of scores is shifted by: m itself, or 0 while every score is -inf, so that
// exp(s - shift) is exp(-inf) = 0 and never exp(-inf - -inf) = NaN.
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE F exp_shift(F m) {
  return m == softmax_detail::neg_inf<F>() ? F(0) : m;
}

// Factor that rescales a state with max m_old to a new max m_new >= m_old: exp(m_old - m_new),
// which is 0 when the state was empty and 1 when nothing changed.
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE F rescale_factor(F m_old, F m_new) {
  return softmax_detail::exp_of(m_old - exp_shift(m_new));
}

// Weights that merge two states: merged o = scale_a * o_a + scale_b * o_b.
template <class F>
struct MergeWeights {
  SoftmaxStats<F> merged;
  F scale_a;
  F scale_b;
};

template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE MergeWeights<F> merge_weights(SoftmaxStats<F> a,
                                                                        SoftmaxStats<F> b) {
  const F m = a.m > b.m ? a.m : b.m;
  const F shift = exp_shift(m);
  const F sa = softmax_detail::exp_of(a.m - shift);
  const F sb = softmax_detail::exp_of(b.m - shift);
  return {{m, sa * a.l + sb * b.l}, sa, sb};
}

// Merges state b (stats + o_b[0, dim)) into state a (stats + o_a[0, dim)).
template <class F>
LEANATTN_HOST_DEVICE void merge_into(SoftmaxStats<F>& a, F* o_a, SoftmaxStats<F> b, const F* o_b,
                                     int dim) {
  const MergeWeights<F> w = merge_weights(a, b);
  for (int i = 0; i < dim; ++i) o_a[i] = w.scale_a * o_a[i] + w.scale_b * o_b[i];
  a = w.merged;
}

// Online update with a block of n scores s[0, n): updates the stats, writes p[j] = exp(s[j] -
// m_new) and returns the factor the caller must rescale its o by before adding sum_j p[j] v_j.
template <class F>
LEANATTN_HOST_DEVICE F update_with_block(SoftmaxStats<F>& st, const F* s, F* p, int n) {
  F m_new = st.m;
  for (int j = 0; j < n; ++j) m_new = s[j] > m_new ? s[j] : m_new;
  const F shift = exp_shift(m_new);
  const F rescale = softmax_detail::exp_of(st.m - shift);
  F sum = F(0);
  for (int j = 0; j < n; ++j) {
    p[j] = softmax_detail::exp_of(s[j] - shift);
    sum += p[j];
  }
  st.m = m_new;
  st.l = st.l * rescale + sum;
  return rescale;
}

// Output factor and log-sum-exp of a finished state: output = o * inv_l. An empty state gives
// inv_l = 0 (output 0) and lse = -inf; a NaN l gives NaN for both.
template <class F>
struct Finalized {
  F inv_l;
  F lse;
};

template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE Finalized<F> finalize(SoftmaxStats<F> st) {
  if (st.l == F(0)) return {F(0), softmax_detail::neg_inf<F>()};
  return {F(1) / st.l, st.m + softmax_detail::log_of(st.l)};
}

}  // namespace leanattn
