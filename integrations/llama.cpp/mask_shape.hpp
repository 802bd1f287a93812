// What a FLASH_ATTN_EXT node's f16 mask shows, read once per node before it is computed: the last
// cell some rows see (how far a request reads its cache), and whether a prompt's mask is
// causal-shaped, so its stream runs leanattn's causal variant, which skips the blocks of keys a
// block of rows does not see. ggml's mask is [n_kv, n_rows_pad, 1 or n_head, 1 or n_stream],
// contiguous; -inf (0xFC00) hides a cell, anything else is added to the score. Cells are in the
// cache's order, which is position order only where the cache has not wrapped: shapes are judged
// on cell indices, every row and head read, nothing assumed.
#pragma once

#include <cstdint>
#include <vector>

struct ggml_tensor;

namespace leanattn::llama_cpp {

// Row `row` of stream `stream`'s mask for query head `head` (ggml's broadcasting over head groups
// and streams).
const std::uint16_t* mask_row(const ggml_tensor* mask, std::int64_t row, std::int64_t head,
                              std::int64_t stream);

// Past the last cell that rows [row_begin, row_end) of `stream` see on any head: 0 when none.
// Reads each row from its end down to the largest end found so far.
std::int64_t visible_end(const ggml_tensor* mask, std::int64_t stream, std::int64_t row_begin,
                         std::int64_t row_end, std::int64_t n_kv);

// A mask whose every stream is causal-shaped as leanattn's causal variant reads it (bottom-right
// aligned): row i of `rows` sees exactly the cells [begin_i, e + i), e >= 1 the same for every row
// and head of the stream, and begin_i = max(0, e + i - 1 - window_left) with one window_left for
// the whole node (none: every begin_i is 0). The request of stream s then has
// seq_len = e_s + rows - 1 keys, the end of its last row, and query row i at position e_s - 1 + i.
struct CausalShape {
  std::vector<std::int32_t> seq_lens;  // [streams]
  std::int32_t window_left = -1;       // -1: no window (llama.cpp's n_swa - 1 otherwise)
};

// Whether the mask of every stream of a node of `rows` query rows is causal-shaped (see above),
// filling `out` when it is. Each row is read once, up to its first cell off the shape.
bool causal_shape(const ggml_tensor* mask, std::int64_t rows, std::int64_t streams,
                  std::int64_t n_kv, CausalShape& out);

}  // namespace leanattn::llama_cpp
