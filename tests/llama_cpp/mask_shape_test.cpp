// The mask reader of the llama.cpp backend (integrations/llama.cpp/mask_shape.cpp) on masks built
// cell by cell: causal-shaped masks (any visible values, several depths, streams and head
// groups, sliding windows) are recognised with the seq_len and window leanattn's bottom-right
// aligned causal variant needs; masks one cell off that shape (a row that sees one more cell or
// one fewer, a hole, a visible cell far past the row, a wrapped cache, an empty row, a window
// one cell off, one stream or head off) are not; visible_end's last cell; and one stream's rows
// cut into one request per sequence (row_requests: a unified cache's slots).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "ggml.h"
#include "mask_shape.hpp"

namespace leanattn::llama_cpp {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

// A mask [n_kv, rows + 3 padding rows, heads, planes] whose cell j of row i, head h, plane s is
// shown (a random value in [-1, 1], sometimes exactly 0 or -0) when visible(s, h, i, j).
struct Mask {
  ggml_context* ctx = nullptr;
  ggml_tensor* t = nullptr;
  Mask(std::int64_t n_kv, std::int64_t rows, std::int64_t heads, std::int64_t planes,
       const std::function<bool(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& visible) {
    const std::int64_t padded = rows + 3;
    ctx = ggml_init(
        {static_cast<std::size_t>(n_kv * padded * heads * planes * 2 + (1 << 16)), nullptr, false});
    t = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, n_kv, padded, heads, planes);
    std::mt19937 rng(static_cast<std::uint32_t>(n_kv * 31 + rows));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto* cells = static_cast<ggml_fp16_t*>(t->data);
    for (std::int64_t s = 0; s < planes; ++s) {
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t i = 0; i < padded; ++i) {
          for (std::int64_t j = 0; j < n_kv; ++j) {
            const std::uint32_t draw = rng() % 8;
            const float shown = draw == 0 ? 0.0f : draw == 1 ? -0.0f : uniform(rng);
            // Padding rows past `rows` are never read: visible everywhere, off any shape.
            const bool seen = i >= rows || visible(s, h, i, j);
            cells[((s * heads + h) * padded + i) * n_kv + j] =
                ggml_fp32_to_fp16(seen ? shown : -kInf);
          }
        }
      }
    }
  }
  Mask(const Mask&) = delete;
  Mask& operator=(const Mask&) = delete;
  ~Mask() { ggml_free(ctx); }
};

// Row i of a causal mask at depth `e` (row 0 sees e cells) with a window (-1: none).
bool causal(std::int64_t e, std::int64_t window, std::int64_t i, std::int64_t j) {
  const std::int64_t position = e + i - 1;
  return j <= position && (window < 0 || j >= position - window);
}

TEST(MaskShape, CausalMasksAtAnyDepth) {
  for (const std::int64_t rows : {1, 9, 64, 130}) {
    for (const std::int64_t e : {1, 2, 63, 200}) {
      const std::int64_t n_kv = e + rows - 1 + 70;  // hidden cells after the last row's end
      Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) { return causal(e, -1, i, j); });
      CausalShape shape;
      ASSERT_TRUE(causal_shape(m.t, rows, 1, n_kv, shape)) << rows << " rows, e " << e;
      EXPECT_EQ(shape.seq_lens, std::vector<std::int32_t>{static_cast<std::int32_t>(e + rows - 1)});
      EXPECT_EQ(shape.window_left, -1);
      EXPECT_EQ(visible_end(m.t, 0, 0, rows, n_kv), e + rows - 1);
      EXPECT_EQ(visible_end(m.t, 0, 0, 1, n_kv), e);
    }
  }
  // The last row sees every cell (no hidden tail).
  Mask full(40, 10, 1, 1, [](auto, auto, auto i, auto j) { return causal(31, -1, i, j); });
  CausalShape shape;
  ASSERT_TRUE(causal_shape(full.t, 10, 1, 40, shape));
  EXPECT_EQ(shape.seq_lens, std::vector<std::int32_t>{40});
}

TEST(MaskShape, SlidingWindows) {
  // Windows that start after cell 0 from the first row, from a middle row, and never.
  for (const std::int64_t window : {3, 40, 69, 200}) {
    const std::int64_t rows = 30, e = 50, n_kv = 100;
    Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) { return causal(e, window, i, j); });
    CausalShape shape;
    ASSERT_TRUE(causal_shape(m.t, rows, 1, n_kv, shape)) << window;
    EXPECT_EQ(shape.seq_lens, std::vector<std::int32_t>{79});
    // Every row starting at cell 0: no window to tell (the same keys as none).
    EXPECT_EQ(shape.window_left, window >= e + rows - 2 ? -1 : window) << window;
  }
  // One row's window one cell off: one more cell, one fewer.
  Mask wider(100, 30, 1, 1, [](auto, auto, auto i, auto j) {
    return causal(50, 10, i, j) || (i == 17 && j == 50 + 17 - 1 - 11);
  });
  Mask narrower(100, 30, 1, 1, [](auto, auto, auto i, auto j) {
    return causal(50, 10, i, j) && !(i == 17 && j == 50 + 17 - 1 - 10);
  });
  CausalShape shape;
  EXPECT_FALSE(causal_shape(wider.t, 30, 1, 100, shape));
  EXPECT_FALSE(causal_shape(narrower.t, 30, 1, 100, shape));
  // A window that grows row by row (a fixed first cell after 0).
  Mask growing(100, 30, 1, 1, [](auto, auto, auto i, auto j) { return j >= 5 && j < 50 + i; });
  EXPECT_FALSE(causal_shape(growing.t, 30, 1, 100, shape));
  // Rows that start at cell 0 past where the window the later rows show says they start.
  Mask late(100, 30, 1, 1,
            [](auto, auto, auto i, auto j) { return i < 20 ? j < 50 + i : causal(50, 60, i, j); });
  EXPECT_FALSE(causal_shape(late.t, 30, 1, 100, shape));
  // Only the last row starting after cell 0 is a window (of its position - 1 cells) all the same.
  Mask last(100, 30, 1, 1, [](auto, auto, auto i, auto j) {
    return causal(50, -1, i, j) && !(i == 29 && j == 0);
  });
  ASSERT_TRUE(causal_shape(last.t, 30, 1, 100, shape));
  EXPECT_EQ(shape.window_left, 50 + 29 - 1 - 1);
}

TEST(MaskShape, MasksOneCellOffAreNotCausal) {
  const std::int64_t rows = 40, e = 20, n_kv = 128;
  const std::vector<std::pair<const char*, std::function<bool(std::int64_t, std::int64_t)>>> off = {
      {"a row sees one more cell",
       [](std::int64_t i, std::int64_t j) {
         return causal(e, -1, i, j) || (i == 7 && j == e + 7);
       }},
      {"the last row sees one more cell",
       [](std::int64_t i, std::int64_t j) {
         return causal(e, -1, i, j) || (i == rows - 1 && j == e + rows - 1);
       }},
      {"a row sees one fewer cell",
       [](std::int64_t i, std::int64_t j) {
         return causal(e, -1, i, j) && !(i == 30 && j == e + 29);
       }},
      {"a hole",
       [](std::int64_t i, std::int64_t j) { return causal(e, -1, i, j) && !(i == 12 && j == 3); }},
      {"cell 0 hidden in a middle row",
       [](std::int64_t i, std::int64_t j) { return causal(e, -1, i, j) && !(i == 12 && j == 0); }},
      {"a visible cell far past the row",
       [](std::int64_t i, std::int64_t j) {
         return causal(e, -1, i, j) || (i == 4 && j == n_kv - 1);
       }},
      {"every row the same cells (not causal)",
       [](std::int64_t, std::int64_t j) { return j < e + rows - 1; }},
      {"rows two cells apart", [](std::int64_t i, std::int64_t j) { return j < e + 2 * i; }},
      {"an empty row",
       [](std::int64_t i, std::int64_t j) { return i != 0 && causal(e, -1, i, j); }},
      {"a wrapped cache (the rows' cells after the older ones' at the end)",
       [](std::int64_t i, std::int64_t j) { return j < i + 1 || j >= n_kv - e + 1; }},
      {"shifted: cells from 5 on",
       [](std::int64_t i, std::int64_t j) { return j >= 5 && j < 5 + e + i; }},
  };
  for (const auto& [what, visible] : off) {
    Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) { return visible(i, j); });
    CausalShape shape;
    EXPECT_FALSE(causal_shape(m.t, rows, 1, n_kv, shape)) << what;
  }
  CausalShape shape;
  EXPECT_FALSE(causal_shape(nullptr, rows, 1, n_kv, shape));
}

TEST(MaskShape, StreamsAndHeadGroups) {
  const std::int64_t rows = 16, n_kv = 256, heads = 4;
  auto depth = [](std::int64_t s) { return 100 - 30 * s; };  // each stream its own
  {
    Mask m(n_kv, rows, heads, 3,
           [&](auto s, auto, auto i, auto j) { return causal(depth(s), -1, i, j); });
    CausalShape shape;
    ASSERT_TRUE(causal_shape(m.t, rows, 3, n_kv, shape));
    EXPECT_EQ(shape.seq_lens, (std::vector<std::int32_t>{115, 85, 55}));
    EXPECT_EQ(visible_end(m.t, 2, 0, rows, n_kv), 55);
  }
  {  // one mask plane for every stream (ggml broadcasts it)
    Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) { return causal(9, -1, i, j); });
    CausalShape shape;
    ASSERT_TRUE(causal_shape(m.t, rows, 3, n_kv, shape));
    EXPECT_EQ(shape.seq_lens, (std::vector<std::int32_t>{24, 24, 24}));
  }
  {  // one stream off the shape: the node is not causal (one flag per leanattn problem)
    Mask m(n_kv, rows, 1, 3, [&](auto s, auto, auto i, auto j) {
      return causal(depth(s), -1, i, j) && !(s == 2 && i == 5 && j == 1);
    });
    CausalShape shape;
    EXPECT_FALSE(causal_shape(m.t, rows, 3, n_kv, shape));
  }
  {  // a head group at another depth, and one with another window (one request per stream)
    Mask depths(n_kv, rows, heads, 1,
                [&](auto, auto h, auto i, auto j) { return causal(h == 2 ? 51 : 50, -1, i, j); });
    Mask windows(n_kv, rows, heads, 1,
                 [&](auto, auto h, auto i, auto j) { return causal(50, h == 3 ? 20 : 21, i, j); });
    CausalShape shape;
    EXPECT_FALSE(causal_shape(depths.t, rows, 1, n_kv, shape));
    EXPECT_FALSE(causal_shape(windows.t, rows, 1, n_kv, shape));
  }
}

// row_requests on one stream: two slots decoding (rows 0, 1, each in its own block of cells)
// beside a third slot's prompt (rows 2..13) in its block: causal, holes inside, a window back to
// each block's first cell; the same prompt non-causal (every row sees the whole block: equal
// spans); an empty row; one row spanning every block (no window: it starts at cell 0).
TEST(MaskShape, RowRequestsOnePerSequence) {
  const std::int64_t rows = 14, n_kv = 320;
  auto slot = [](std::int64_t i, std::int64_t j, bool prompt_causal) {
    if (i == 0) return j >= 10 && j < 50;                    // 40 cells
    if (i == 1) return j >= 100 && j < 170;                  // 70 cells
    const std::int64_t end = prompt_causal ? 250 + i : 263;  // rows 2..13: cells 200..
    return j >= 200 && j < end && j != 210;                  // cell 210 another sequence's
  };
  {
    Mask m(n_kv, rows, 2, 1, [&](auto, auto, auto i, auto j) { return slot(i, j, true); });
    EXPECT_EQ(row_span(m.t, 0, 1, n_kv).begin, 100);
    EXPECT_EQ(row_span(m.t, 0, 1, n_kv).end, 170);
    const RowRequests r = row_requests(m.t, rows, n_kv);
    EXPECT_TRUE(r.causal);
    EXPECT_EQ(r.query_start_loc, (std::vector<std::int32_t>{0, 1, 2, 14}));
    EXPECT_EQ(r.seq_lens, (std::vector<std::int32_t>{50, 170, 263}));
    EXPECT_EQ(r.window_left, 69);  // slot 1's 70 cells (the prompt's last row: 62)
  }
  {
    Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) { return slot(i, j, false); });
    const RowRequests r = row_requests(m.t, rows, n_kv);
    EXPECT_FALSE(r.causal);
    EXPECT_EQ(r.query_start_loc, (std::vector<std::int32_t>{0, 1, 2, 14}));
    EXPECT_EQ(r.seq_lens, (std::vector<std::int32_t>{50, 170, 263}));
    EXPECT_EQ(r.window_left, 69);
  }
  {  // row 1 sees nothing; row 0 spans from cell 0 to the prompt's block
    Mask m(n_kv, rows, 1, 1, [&](auto, auto, auto i, auto j) {
      return i == 0 ? j < 300 : i == 1 ? false : slot(i, j, true);
    });
    const RowRequests r = row_requests(m.t, rows, n_kv);
    EXPECT_EQ(r.query_start_loc, (std::vector<std::int32_t>{0, 1, 2, 14}));
    EXPECT_EQ(r.seq_lens, (std::vector<std::int32_t>{300, 0, 263}));
    EXPECT_EQ(r.window_left, -1);
  }
  {  // a prompt whose tokens took every third cell (free cells of a fragmented cache): each row
     // ends 3 cells after the one before, one causal request of 263 keys, row i at position
     // 249 + i; the last row's window reaches back to cell 46, its first
    Mask m(n_kv, rows, 1, 1,
           [&](auto, auto, auto i, auto j) { return j >= 46 && j % 3 == 1 && j < 224 + 3 * i; });
    const RowRequests r = row_requests(m.t, rows, n_kv);
    EXPECT_TRUE(r.causal);
    EXPECT_EQ(r.query_start_loc, (std::vector<std::int32_t>{0, 14}));
    EXPECT_EQ(r.seq_lens, (std::vector<std::int32_t>{263}));
    EXPECT_EQ(r.window_left, 262 - 46);
  }
}

}  // namespace
}  // namespace leanattn::llama_cpp
