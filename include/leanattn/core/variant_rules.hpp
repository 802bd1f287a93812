// The per-row semantics of the attention variants (docs/numerics.md, "Variants"), in one place
// for the planner, the plan interpreter, the CPU engine and the CUDA kernels (compiled
// __host__ __device__ by nvcc; no std:: containers). The fp64 reference implements the same rules
// on its own, literally, so a mistake here shows up as a mismatch.
//
// A request has seq_len keys at positions 0..seq_len-1 and q_len query rows; the queries are the
// last q_len positions: query i (0-based among the new tokens) is at position
// seq_len - q_len + i. Its visible keys are the range [begin, end):
//   end   = position + 1 when causal, else seq_len;
//   begin = max(0, position - window_left) with a window (window_left >= 0), else 0.
// The row's own position is always visible (causal or not), so a non-empty request never has a
// row with no visible key. For every visible key j the score is
//   s = scale * q.k_j;  s = softcap * tanh(s / softcap) when softcap > 0;
//   s += -slope * |j - position| with ALiBi (= slope * (j - position) for every causal key).
// A sink (one logit per query head, no value) joins the denominator once, at finalisation.
#pragma once

#include <cmath>
#include <cstdint>

#include "leanattn/core/host_device.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn {

// Keys [begin, end) of a request that one query row sees.
struct KeyRange {
  std::int64_t begin;
  std::int64_t end;
};

// Position of query row i (0 <= i < q_len) of a request with seq_len keys.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr std::int64_t query_position(
    std::int64_t seq_len, std::int32_t q_len, std::int32_t i) {
  return seq_len - q_len + i;
}

// The keys query row i sees. window_left < 0: no window.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr KeyRange visible_keys(
    std::int64_t seq_len, std::int32_t q_len, std::int32_t i, bool causal,
    std::int32_t window_left) {
  const std::int64_t pos = query_position(seq_len, q_len, i);
  const std::int64_t end = causal ? pos + 1 : seq_len;
  const std::int64_t from = pos - window_left;
  const std::int64_t begin = window_left < 0 || from < 0 ? 0 : from;
  return {begin, end};
}

// First key any row of the request sees (row 0's begin: the earliest query has the earliest
// window): max(0, seq_len - q_len - window_left) with a window, else 0. The planner cuts a
// request's tiles from here to seq_len, so only keys some row sees are planned and read.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr std::int64_t first_planned_key(
    std::int64_t seq_len, std::int32_t q_len, std::int32_t window_left) {
  if (seq_len == 0 || window_left < 0) return 0;
  const std::int64_t from = seq_len - q_len - window_left;
  return from < 0 ? 0 : from;
}

namespace variant_detail {
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float tanh_of(float x) {
  return ::tanhf(x);
}
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE double tanh_of(double x) {
  return ::tanh(x);
}
}  // namespace variant_detail

// The logit soft-cap: cap * tanh(s / cap), for cap > 0 (callers skip it when cap is 0).
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE F apply_softcap(F s, F cap) {
  return cap * variant_detail::tanh_of(s / cap);
}

// The ALiBi bias of key `key` for the query at `query`: -slope * |key - query| (flash-attn's
// rule; for a causal key, key <= query, it is slope * (key - query)).
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE F alibi_bias(F slope, std::int64_t key,
                                                       std::int64_t query) {
  const std::int64_t dist = key > query ? key - query : query - key;
  return -slope * static_cast<F>(dist);
}

// finalize() with a sink logit joining the denominator: l' = l + exp(sink - m), computed around
// M = max(m, sink) so that a sink far above every score neither overflows nor loses the output:
//   inv_l = exp(m - M) / (l exp(m - M) + exp(sink - M)),  lse = M + log(l exp(m - M) + exp(sink -
//   M))
// i.e. output *= 1 / (1 + exp(sink - lse)) and lse' = logaddexp(lse, sink). The empty state (an
// empty request) stays output 0, lse = -inf: no query row exists there for the sink to join.
template <class F>
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE Finalized<F> finalize_with_sink(SoftmaxStats<F> st,
                                                                          F sink) {
  if (st.l == F(0)) return finalize(st);
  const F big = st.m > sink ? st.m : sink;
  const F a = softmax_detail::exp_of(st.m - big);
  const F denom = st.l * a + softmax_detail::exp_of(sink - big);
  return {a / denom, big + softmax_detail::log_of(denom)};
}

}  // namespace leanattn
