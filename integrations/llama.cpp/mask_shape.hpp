// What a FLASH_ATTN_EXT node's f16 mask shows, read once per node before it is computed: the span
// of cells each row sees (how far a request reads its cache, and from where), whether a prompt's
// mask is causal-shaped, so its stream runs leanattn's causal variant, which skips the blocks of
// keys a block of rows does not see, and how a unified cache's rows split into one request per
// sequence. ggml's mask is [n_kv, n_rows_pad, 1 or n_head, 1 or n_stream],
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

// The cells row `row` of `stream` sees on some head lie in [begin, end): begin its first visible
// cell, end past its last; {0, 0} when it sees none. Cells between may be hidden (the bias hides
// them). Reads the row from each end to its first visible cell.
struct RowSpan {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
RowSpan row_span(const ggml_tensor* mask, std::int64_t stream, std::int64_t row, std::int64_t n_kv);

// The least window_left under which each row at position end - 1 (the last cell it sees) sees
// back to its span's first cell: max(end - 1 - begin) over the rows that see a cell; -1 when that
// window would hide no cell of any row's request (some row starts at cell 0 at the largest
// distance). A row at position p then reads keys [p - window_left, p], its span inside.
std::int32_t covering_window(const std::vector<RowSpan>& spans);

// The rows of a one-stream node as requests that each read their own cells: in a unified cache
// (llama-server's -kvu) one stream holds every slot, and a micro-batch mixes one slot's prompt
// rows with other slots' decode rows, each seeing only its own sequence's cells. Consecutive rows
// form one request when they look like one sequence's new tokens:
//   causal: each row ends after the row before, at most 16 cells after (a prompt's rows, their
//   cells in a row or scattered over free cells); row i of n is then at position
//   seq_len - n + i, at or past its last visible cell, the mask hiding what lies between;
//   not causal: the rows' spans are equal (a non-causal prompt).
// Whichever cut gives fewer requests is taken (K and V are read once per request). A request's
// seq_len is the end of its last row (at least its row count); `window_left` (covering_window
// of the requests' spans) lets each request skip the cells before its own. Rows seeing no cell
// are requests of seq_len 0 (output 0).
struct RowRequests {
  bool causal = true;
  std::vector<std::int32_t> query_start_loc;  // [requests + 1]
  std::vector<std::int32_t> seq_lens;         // [requests]
  std::int32_t window_left = -1;
};
RowRequests row_requests(const ggml_tensor* mask, std::int64_t rows, std::int64_t n_kv);

// The pages of `page` cells inside `span` that hold a cell row `row` of `stream` sees on some
// head, appended to `out` as page indices within the stream (a unified cache whose sequences'
// cells interleave: the pages a row reads when it reads only its own). Returns how many.
std::int64_t visible_pages(const ggml_tensor* mask, std::int64_t stream, std::int64_t row,
                           RowSpan span, std::int64_t page, std::vector<std::int32_t>& out);

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
