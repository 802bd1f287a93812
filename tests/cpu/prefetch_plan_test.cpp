// plan_prefetch() (src/cpu/prefetch_plan.hpp) on synthetic addresses: with adjacent heads the n
// calls of a block together prefetch every 64-byte line of the next block's rows (all heads),
// each run starting inside those rows, in address order; otherwise each call prefetches the rows
// of the next call's head (the first head's next block after the last call). Swept over head
// counts, head sizes, dtypes, block positions (a full next block, a short one, none) and both
// layouts (paged with pages out of address order).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "cpu/prefetch_plan.hpp"

namespace leanattn::cpu {
namespace {

constexpr std::int32_t kBlock = 32;
constexpr std::int32_t kPadded = kBlock + 16;

// A fake cache base (never dereferenced): addresses only.
const char* const kBase = reinterpret_cast<const char*>(std::uintptr_t{1} << 40);

struct Layout {
  KvAddressing a{};
  std::vector<std::int32_t> table;
};

// kv_heads heads of head_dim elements per token row; contiguous, or paged by `page` tokens
// with a reversed block table (pages out of address order).
Layout make_layout(std::int32_t kv_heads, std::int32_t head_dim, std::int32_t page) {
  Layout l;
  const std::int64_t row = static_cast<std::int64_t>(kv_heads) * head_dim;
  if (page == 0) {
    l.a = {4096 * row, row, head_dim, 0, nullptr, 0};
    return l;
  }
  for (std::int32_t i = 0; i < 64; ++i) l.table.push_back(63 - i);
  l.a = {page * row, row, head_dim, page, l.table.data(), 64};
  return l;
}

// Every line of tokens [b, e) of heads [h0, h0 + n) (adjacent, so one run per token).
std::set<std::uintptr_t> lines_of(const PrefetchGroup& g, std::int64_t b, std::int64_t e) {
  std::set<std::uintptr_t> lines;
  for (std::int64_t u = b; u < e; ++u) {
    const auto start =
        reinterpret_cast<std::uintptr_t>(g.k_base + g.k.row(g.request, u, g.h0) * g.element_bytes);
    const std::int64_t bytes = g.heads * g.row_bytes;
    for (std::int64_t x = 0; x < bytes; x += 64) lines.insert(start + x);
  }
  return lines;
}

TEST(PrefetchPlan, AdjacentHeadsCoverTheNextBlockExactly) {
  for (std::int32_t page : {0, 16, 48}) {
    for (std::int32_t heads : {1, 2, 3, 8}) {
      for (std::int32_t d : {64, 96, 128}) {  // rows of whole lines, as real caches have
        for (std::int64_t elt : {2, 4}) {
          for (std::int64_t end : {std::int64_t{100}, std::int64_t{64}, std::int64_t{40}}) {
            const Layout l = make_layout(heads, d, page);
            const PrefetchGroup g{kBase, kBase, l.a, l.a, elt, 0, 0, heads, d * elt, true};
            const std::int64_t t = 0, next = std::min<std::int64_t>(kBlock, end);
            std::set<std::uintptr_t> got;
            std::uintptr_t last = 0;
            for (std::int64_t call = 0; call < heads; ++call) {
              std::vector<const char*> pk(kPadded, nullptr), pv(kPadded, nullptr);
              const std::int32_t n = plan_prefetch(g, prefetch_block(g, next, end, kBlock), call, t,
                                                   0, kBlock, kPadded, pk.data(), pv.data());
              if (next == end) {
                EXPECT_EQ(n, 0);
                continue;
              }
              ASSERT_GT(n, 0);
              const std::int64_t stop = std::min<std::int64_t>(next + kBlock, end);
              for (std::int32_t j = 0; j < kPadded; ++j) {
                ASSERT_NE(pk[j], nullptr);
                EXPECT_EQ(pk[j], pv[j]);  // K and V share the layout here
                for (std::int32_t x = 0; x < n; ++x) {
                  got.insert(reinterpret_cast<std::uintptr_t>(pk[j]) + 64 * x);
                }
                // Each run starts inside a row of the next block.
                bool inside = false;
                for (std::int64_t u = next; u < stop; ++u) {
                  const char* row = g.k_base + g.k.row(0, u, 0) * elt;
                  inside = inside || (pk[j] >= row && pk[j] < row + heads * d * elt);
                }
                EXPECT_TRUE(inside) << "page " << page << " heads " << heads << " call " << call;
              }
              // Runs of consecutive calls follow each other (address order within a page).
              if (page == 0) {
                EXPECT_GE(reinterpret_cast<std::uintptr_t>(pk[0]), last);
                last = reinterpret_cast<std::uintptr_t>(pk[kBlock - 1]);
              }
            }
            if (next == end) continue;
            const std::set<std::uintptr_t> want =
                lines_of(g, next, std::min<std::int64_t>(next + kBlock, end));
            // Every line of the next block is prefetched.
            for (std::uintptr_t x : want) EXPECT_TRUE(got.count(x)) << "page " << page;
          }
        }
      }
    }
  }
}

TEST(PrefetchPlan, SeparateHeadsPrefetchTheNextCall) {
  for (std::int32_t page : {0, 16}) {
    const std::int32_t d = 128;
    const std::int64_t elt = 2;
    const Layout l = make_layout(8, d, page);
    // Heads 1, 4, 6 of 8: not adjacent.
    const std::vector<std::int32_t> heads = {1, 4, 6};
    const PrefetchGroup g{kBase, kBase, l.a, l.a, elt, 0, 1, 3, d * elt, false};
    for (std::int64_t end : {std::int64_t{100}, std::int64_t{40}, std::int64_t{32}}) {
      const std::int64_t t = 0, next = std::min<std::int64_t>(kBlock, end);
      for (std::int64_t call = 0; call < 3; ++call) {
        const bool wrap = call == 2;
        const std::int32_t h = heads[static_cast<std::size_t>(wrap ? 0 : call + 1)];
        std::vector<const char*> pk(kPadded, nullptr), pv(kPadded, nullptr);
        const std::int32_t n = plan_prefetch(g, prefetch_block(g, next, end, kBlock), call, t, h,
                                             kBlock, kPadded, pk.data(), pv.data());
        const std::int64_t after = std::min<std::int64_t>(next + kBlock, end) - next;
        const std::int64_t u0 = wrap ? next : t, count = wrap ? after : next - t;
        if (count <= 0) {
          EXPECT_EQ(n, 0);
          continue;
        }
        EXPECT_EQ(n, (d * elt + 63) / 64);
        for (std::int32_t j = 0; j < kPadded; ++j) {
          const std::int64_t u = u0 + std::min<std::int64_t>(std::min(j, kBlock - 1), count - 1);
          EXPECT_EQ(pk[j], kBase + l.a.row(0, u, h) * elt) << "call " << call << " j " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace leanattn::cpu
