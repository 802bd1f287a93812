// The CPU engine's prefetch addresses (docs/cpu-engine.md, "Prefetch"): what each kernel call of
// a group (run_group in engine.cpp: segments of one request and tile range, run block by block,
// head by head) asks the kernel to prefetch of what comes next. A pure function of addresses, so
// it is tested on its own (tests/cpu/prefetch_plan_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/row_walk.hpp"
#include "leanattn/core/ceil_div.hpp"
#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cpu {

// A group's K and V rows: heads [h0, h0 + heads) of `request` (not necessarily consecutive:
// `adjacent` says whether they are, and sit next to each other in every token row).
struct PrefetchGroup {
  const char* k_base = nullptr;  // k_cache, bytes
  const char* v_base = nullptr;  // v_cache, bytes
  KvAddressing k{}, v{};
  std::int64_t element_bytes = 2;  // the unit of the strides (dtype_size)
  std::int32_t request = 0;
  std::int32_t h0 = 0;         // the first segment's KV head
  std::int64_t heads = 1;      // segments in the group
  std::int64_t row_bytes = 0;  // one head's row: row_units x element_bytes (the longer of K's
                               //   and V's where their types differ)
  bool adjacent = false;       // heads h0 .. h0 + heads - 1, head stride = a row, K and V (rows
                               //   of one length)
  std::int64_t v_element_bytes = 0;  // V's stride unit where V's type differs (0: element_bytes)
};

// What the calls of one block share: the next block, tokens [next, next + after), and (adjacent
// heads) the 64-byte lines of one token's row of all heads and each call's lines per token.
struct PrefetchBlock {
  std::int64_t next = 0;
  std::int64_t after = 0;
  std::int64_t row_lines = 0;
  std::int64_t per_token = 0;
};

// The block after [t, next) of a group's tokens [.., end).
inline PrefetchBlock prefetch_block(const PrefetchGroup& g, std::int64_t next, std::int64_t end,
                                    std::int32_t block_tokens) {
  PrefetchBlock b;
  b.next = next;
  b.after = std::min<std::int64_t>(next + block_tokens, end) - next;
  b.row_lines = ceil_div<std::int64_t>(g.heads * g.row_bytes, 64);
  // The next block is `after` rows of `row_lines` lines; call i takes the i-th run of
  // block_tokens x per_token lines, per_token with each token.
  b.per_token = ceil_div<std::int64_t>(b.after * b.row_lines, g.heads * block_tokens);
  return b;
}

// The lines kernel call `call` (0 .. heads - 1) of the block of tokens [t, b.next) prefetches,
// into pk and pv ([padded_rows] entries: entry j is token j's start address; entries past
// block_tokens repeat the last): returns the lines per entry (0: none).
//   Adjacent heads: the next block, tokens [b.next, b.next + b.after) of all heads, is cut into
//   `heads` equal runs of 64-byte lines in address order, call i taking run i (DRAM then sees
//   sequential streams).
//   Otherwise: the rows of the next call, head next_head (the following segment's KV head; for
//   the last call the first head, in the next block).
// Inline: it runs once per kernel call, in the engine's innermost loop.
inline std::int32_t plan_prefetch(const PrefetchGroup& g, const PrefetchBlock& b, std::int64_t call,
                                  std::int64_t t, std::int32_t next_head, std::int32_t block_tokens,
                                  std::int32_t padded_rows, const char** pk, const char** pv) {
  auto k_row = [&](std::int64_t u, std::int32_t h) {
    return g.k_base + g.k.row(g.request, u, h) * g.element_bytes;
  };
  const std::int64_t v_elt = g.v_element_bytes > 0 ? g.v_element_bytes : g.element_bytes;
  auto v_row = [&](std::int64_t u, std::int32_t h) {
    return g.v_base + g.v.row(g.request, u, h) * v_elt;
  };
  const std::int64_t next = b.next, after = b.after, row_lines = b.row_lines;
  std::int32_t lines = 0;
  if (g.adjacent) {
    const std::int64_t per_token = b.per_token;
    if (per_token > 0) {
      lines = static_cast<std::int32_t>(per_token);
      // Token u's lines [line, line + per_token) of its row, walked without divisions.
      const std::int64_t start = std::min(call * block_tokens * per_token, after * row_lines - 1);
      // Rows walked (row_walk.hpp): no multiply or (paged) division per token; contiguous
      // caches by a pointer step, in registers (this loop runs per kernel call and token).
      std::int64_t u = next + start / row_lines;
      const std::int64_t last = next + after - 1;
      RowWalk k_walk(g.k, g.request, u, g.h0), v_walk(g.v, g.request, u, g.h0);
      const char* krow_u = g.k_base + k_walk.offset() * g.element_bytes;
      const char* vrow_u = g.v_base + v_walk.offset() * v_elt;
      const bool contiguous = g.k.page_size == 0 && g.v.page_size == 0;
      const std::int64_t k_step = g.k.token_stride * g.element_bytes;
      const std::int64_t v_step = g.v.token_stride * v_elt;
      const std::int64_t row_end = row_lines * 64, step = per_token * 64;
      std::int64_t at = start % row_lines * 64;  // byte offset of token u's first line
      for (std::int32_t j = 0; j < block_tokens; ++j) {
        pk[j] = krow_u + at;
        pv[j] = vrow_u + at;
        at += step;
        while (at >= row_end && u < last) {
          at -= row_end;
          ++u;
          if (contiguous) {
            krow_u += k_step;
            vrow_u += v_step;
          } else {
            k_walk.next();
            v_walk.next();
            krow_u = g.k_base + k_walk.offset() * g.element_bytes;
            vrow_u = g.v_base + v_walk.offset() * v_elt;
          }
        }
        at = std::min(at, row_end - 64);
      }
    }
  } else {
    // The next call: the next head, or after the last head the first head's next block.
    const bool wrap = call + 1 == g.heads;
    const std::int64_t u0 = wrap ? next : t, count = wrap ? after : next - t;
    lines = count > 0 ? static_cast<std::int32_t>(ceil_div<std::int64_t>(g.row_bytes, 64)) : 0;
    for (std::int32_t j = 0; j < block_tokens && count > 0; ++j) {
      const std::int64_t u = u0 + std::min<std::int64_t>(j, count - 1);
      pk[j] = k_row(u, next_head);
      pv[j] = v_row(u, next_head);
    }
  }
  if (lines > 0) {  // the kernel's padded tokens repeat the last row
    std::fill(pk + block_tokens, pk + padded_rows, pk[block_tokens - 1]);
    std::fill(pv + block_tokens, pv + padded_rows, pv[block_tokens - 1]);
  }
  return lines;
}

}  // namespace leanattn::cpu
