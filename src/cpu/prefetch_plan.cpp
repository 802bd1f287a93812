// plan_prefetch() (see prefetch_plan.hpp).
#include "cpu/prefetch_plan.hpp"

#include <algorithm>

#include "leanattn/core/ceil_div.hpp"

namespace leanattn::cpu {

std::int32_t plan_prefetch(const PrefetchGroup& g, std::int64_t call, std::int64_t t,
                           std::int64_t next, std::int64_t end, std::int32_t next_head,
                           std::int32_t block_tokens, std::int32_t padded_rows, const char** pk,
                           const char** pv) {
  auto k_row = [&](std::int64_t u, std::int32_t h) {
    return g.k_base + g.k.row(g.request, u, h) * g.element_bytes;
  };
  auto v_row = [&](std::int64_t u, std::int32_t h) {
    return g.v_base + g.v.row(g.request, u, h) * g.element_bytes;
  };
  const std::int64_t n = g.heads;
  // The next block: tokens [next, next + after).
  const std::int64_t after = std::min<std::int64_t>(next + block_tokens, end) - next;
  const std::int64_t row_lines = ceil_div<std::int64_t>(n * g.row_bytes, 64);  // all n heads
  std::int32_t lines = 0;
  if (g.adjacent) {
    // The next block is `after` rows of `row_lines` lines; call i takes the i-th run of
    // block_tokens x per_token lines, per_token with each token.
    const std::int64_t per_token = ceil_div<std::int64_t>(after * row_lines, n * block_tokens);
    if (per_token > 0) {
      lines = static_cast<std::int32_t>(per_token);
      // Token u's lines [line, line + per_token) of its row, walked without divisions.
      const std::int64_t start = std::min(call * block_tokens * per_token, after * row_lines - 1);
      std::int64_t u = next + start / row_lines, line = start % row_lines;
      const char* krow_u = k_row(u, g.h0);
      const char* vrow_u = v_row(u, g.h0);
      for (std::int32_t j = 0; j < block_tokens; ++j) {
        pk[j] = krow_u + line * 64;
        pv[j] = vrow_u + line * 64;
        line += per_token;
        while (line >= row_lines && u + 1 < next + after) {
          line -= row_lines;
          krow_u = k_row(++u, g.h0);
          vrow_u = v_row(u, g.h0);
        }
        line = std::min(line, row_lines - 1);
      }
    }
  } else {
    // The next call: the next head, or after the last head the first head's next block.
    const bool wrap = call + 1 == n;
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
