// The attention variants as the decode kernel applies them to one row of a pair: a request's query
// tokens (q_len, or its query_start_loc count) and where they live, which query
// token and head a pair row is, which keys of a segment it sees, and the score of a visible key
// (soft-cap, ALiBi). The rules themselves are core/variant_rules.hpp's (visible_keys,
// apply_softcap, alibi_bias); this file only maps the kernel's rows and int32 key positions onto
// them. Host/device: the kernel (collective/warp_attention.cuh, tile_loader.cuh, epilogue.cuh)
// and the CPU tests (tests/cuda) run the same code.
#pragma once

#include <cstdint>

#include "cuda/common/kernel_params.hpp"
#include "cuda/common/tile_math.hpp"
#include "leanattn/core/host_device.hpp"
#include "leanattn/core/variant_rules.hpp"

namespace leanattn::cuda {

// The query tokens of a request as the kernel addresses them: how many (q_len, or the request's
// query_start_loc difference) and where the first lives in q, out and lse (tensors.hpp's
// query_index: (request, 0) without query_start_loc, (0, query_start_loc[request]) with it).
struct RequestQueries {
  std::int32_t count;  // query tokens: the last `count` keys of the request are theirs
  std::int32_t rows;   // count x heads: the pair's rows (0: the request writes nothing)
  std::int32_t batch;  // index in the batch dimension of q, out and lse
  std::int32_t token;  // index of the first query token in their token dimension (int32, as
                       //   query_start_loc; offsets are taken in 64 bits)
};

LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE RequestQueries request_queries(const KernelParams& p,
                                                                         int request) {
  if (p.query_start_loc == nullptr) return {p.q_len, p.group_size, request, 0};
  const std::int32_t first = p.query_start_loc[request];
  const std::int32_t count = p.query_start_loc[request + 1] - first;
  return {count, count * p.heads, 0, first};
}

// Row r of a pair (0 <= r < count x heads): query token r / heads, query head kv_head * heads +
// r % heads. The GQA group's heads of one token are adjacent rows, so the q_len tokens pack into
// the MMA's M dimension beside the group and every K/V tile serves all of them.
struct PairRow {
  std::int32_t token;  // 0 .. count - 1, among the request's new tokens
  std::int32_t head;   // query head
};

LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr PairRow pair_row(int row, int kv_head,
                                                                     int heads) {
  return {row / heads, kv_head * heads + row % heads};
}

// The keys [lo, hi) of a segment's range that a row sees: visible_keys() of its query token cut to
// the range. A row outside the pair (the padding of the last 16-row MMA tile) sees none.
struct RowKeys {
  std::int32_t lo;
  std::int32_t hi;
  LEANATTN_HOST_DEVICE constexpr bool sees(std::int32_t key) const { return key >= lo && key < hi; }
};

LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE constexpr RowKeys row_keys(
    TokenRange range, std::int64_t seq_len, std::int32_t q_len, std::int32_t token, bool causal,
    std::int32_t window_left) {
  const KeyRange seen = visible_keys(seq_len, q_len, token, causal, window_left);
  const std::int64_t lo = seen.begin > range.begin ? seen.begin : range.begin;
  const std::int64_t hi = seen.end < range.end ? seen.end : range.end;
  return {static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi > lo ? hi : lo)};
}

// Everything a step needs about one row of a pass (16 bytes: KernelShape::kRowRuleBytes): the
// keys of the segment it sees, its query position and its ALiBi slope (0 when off).
struct RowRule {
  RowKeys keys;
  std::int32_t position;
  float slope;
};

// The rule of pair row `row` of (request, kv_head) over the segment's `range`; seq_len: the
// request's length, rq its queries. A row at or past the pair's end (rq.rows) sees no key.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE RowRule row_rule(const KernelParams& p,
                                                           const RequestQueries& rq, int kv_head,
                                                           TokenRange range, std::int32_t seq_len,
                                                           int row) {
  if (row >= rq.rows) return {{0, 0}, 0, 0.0f};
  const PairRow pr = pair_row(row, kv_head, p.heads);
  return {row_keys(range, seq_len, rq.count, pr.token, p.causal, p.window_left),
          static_cast<std::int32_t>(query_position(seq_len, rq.count, pr.token)),
          p.alibi_slopes != nullptr ? p.alibi_slopes[pr.head] : 0.0f};
}

// The score of a visible key from the scaled dot product: the soft-cap (cap > 0), then the ALiBi
// bias (slope != 0) of key `key` for the query at `position`, in the order of docs/numerics.md.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float variant_score(float s, float cap, float slope,
                                                              std::int32_t key,
                                                              std::int32_t position) {
  if (cap > 0.0f) s = apply_softcap(s, cap);
  if (slope != 0.0f) s += alibi_bias(slope, key, position);
  return s;
}

}  // namespace leanattn::cuda
