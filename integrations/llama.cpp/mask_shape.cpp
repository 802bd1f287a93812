// What a FLASH_ATTN_EXT node's mask shows (see mask_shape.hpp).
#include "mask_shape.hpp"

#include <algorithm>
#include <optional>

#include "ggml.h"

namespace leanattn::llama_cpp {

namespace {

constexpr std::uint16_t kF16NegInf = 0xFC00;  // -inf hides a cell; -0 and everything else adds
constexpr std::int64_t kChunk = 64;           // cells tested without a branch per cell
// How far apart two rows' ends may be and still be one causal request (row_requests): a prompt
// whose tokens took scattered free cells of a unified cache ends a few cells after the row
// before; other sequences' rows end far away.
constexpr std::int64_t kMaxEndStep = 16;

// The first cell of [from, to) that is hidden (`hidden`) or visible (!`hidden`); `to` when none.
std::int64_t first_cell(const std::uint16_t* m, std::int64_t from, std::int64_t to, bool hidden) {
  std::int64_t j = from;
  for (; j + kChunk <= to; j += kChunk) {
    unsigned found = 0;
    for (std::int64_t k = j; k < j + kChunk; ++k) {
      found |= static_cast<unsigned>((m[k] == kF16NegInf) == hidden);
    }
    if (found != 0) break;
  }
  for (; j < to; ++j) {
    if ((m[j] == kF16NegInf) == hidden) return j;
  }
  return to;
}

// Past the last visible cell of [floor, to); `floor` when none. Reads from `to` down.
std::int64_t last_visible_end(const std::uint16_t* m, std::int64_t floor, std::int64_t to) {
  std::int64_t j = to;
  for (; j - kChunk >= floor; j -= kChunk) {
    unsigned found = 0;
    for (std::int64_t k = j - kChunk; k < j; ++k)
      found |= static_cast<unsigned>(m[k] != kF16NegInf);
    if (found != 0) break;
  }
  for (; j > floor; --j) {
    if (m[j - 1] != kF16NegInf) return j;
  }
  return floor;
}

// The visible cells of a row when they are one run [begin, end); none when the row shows no
// cell or more than one run. Reads the row once, up to the first cell of a second run.
struct VisibleRun {
  std::int64_t begin;
  std::int64_t end;
};
std::optional<VisibleRun> one_run(const std::uint16_t* m, std::int64_t n_kv) {
  const std::int64_t begin = first_cell(m, 0, n_kv, false);
  if (begin == n_kv) return std::nullopt;
  const std::int64_t end = first_cell(m, begin, n_kv, true);
  if (first_cell(m, end, n_kv, false) != n_kv) return std::nullopt;
  return VisibleRun{begin, end};
}

}  // namespace

const std::uint16_t* mask_row(const ggml_tensor* mask, std::int64_t row, std::int64_t head,
                              std::int64_t stream) {
  return reinterpret_cast<const std::uint16_t*>(
      static_cast<const char*>(mask->data) + row * mask->nb[1] +
      (head % mask->ne[2]) * mask->nb[2] + (stream % mask->ne[3]) * mask->nb[3]);
}

std::int64_t visible_end(const ggml_tensor* mask, std::int64_t stream, std::int64_t row_begin,
                         std::int64_t row_end, std::int64_t n_kv) {
  std::int64_t last = 0;
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    for (std::int64_t h = 0; h < mask->ne[2]; ++h) {
      last = last_visible_end(mask_row(mask, r, h, stream), last, n_kv);
    }
  }
  return last;
}

RowSpan row_span(const ggml_tensor* mask, std::int64_t stream, std::int64_t row,
                 std::int64_t n_kv) {
  RowSpan span{n_kv, 0};
  for (std::int64_t h = 0; h < mask->ne[2]; ++h) {
    const std::uint16_t* m = mask_row(mask, row, h, stream);
    span.begin = first_cell(m, 0, span.begin, false);
    span.end = last_visible_end(m, span.end, n_kv);
  }
  return span.end == 0 ? RowSpan{} : span;
}

std::int64_t visible_pages(const ggml_tensor* mask, std::int64_t stream, std::int64_t row,
                           RowSpan span, std::int64_t page, std::vector<std::int32_t>& out) {
  std::int64_t n = 0;
  for (std::int64_t pg = span.begin / page; pg * page < span.end; ++pg) {
    const std::int64_t from = std::max(pg * page, span.begin),
                       to = std::min((pg + 1) * page, span.end);
    bool seen = false;
    for (std::int64_t h = 0; h < mask->ne[2] && !seen; ++h) {
      seen = first_cell(mask_row(mask, row, h, stream), from, to, false) < to;
    }
    if (seen) {
      out.push_back(static_cast<std::int32_t>(pg));
      ++n;
    }
  }
  return n;
}

std::int32_t covering_window(const std::vector<RowSpan>& spans) {
  std::int64_t window = 0;
  for (const RowSpan& s : spans) {
    if (s.end > 0) window = std::max(window, s.end - 1 - s.begin);
  }
  for (const RowSpan& s : spans) {
    if (s.end - 1 - window > 0) return static_cast<std::int32_t>(window);
  }
  return -1;
}

RowRequests row_requests(const ggml_tensor* mask, std::int64_t rows, std::int64_t n_kv) {
  std::vector<RowSpan> spans(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    spans[static_cast<std::size_t>(r)] = row_span(mask, 0, r, n_kv);
  // Where request boundaries fall in each cut: row r starts a request unless it continues r - 1.
  auto starts = [&](bool causal) {
    std::vector<std::int32_t> at{0};
    for (std::int64_t r = 1; r < rows; ++r) {
      const RowSpan& a = spans[static_cast<std::size_t>(r - 1)];
      const RowSpan& b = spans[static_cast<std::size_t>(r)];
      const bool continues = causal ? a.end > 0 && b.end > a.end && b.end - a.end <= kMaxEndStep
                                    : b.begin == a.begin && b.end == a.end;
      if (!continues) at.push_back(static_cast<std::int32_t>(r));
    }
    at.push_back(static_cast<std::int32_t>(rows));
    return at;
  };
  RowRequests out;
  std::vector<std::int32_t> causal = starts(true), plain = starts(false);
  out.causal = causal.size() <= plain.size();
  out.query_start_loc = out.causal ? std::move(causal) : std::move(plain);
  const std::size_t requests = out.query_start_loc.size() - 1;
  out.seq_lens.resize(requests);
  std::vector<RowSpan> reach;  // what each row must see back to: its own span, or its request's
  for (std::size_t b = 0; b < requests; ++b) {
    const std::int32_t first = out.query_start_loc[b], last = out.query_start_loc[b + 1] - 1;
    const RowSpan& tail = spans[static_cast<std::size_t>(last)];
    if (tail.end == 0) {  // sees nothing (in the causal cut a row of its own)
      out.seq_lens[b] = 0;
      continue;
    }
    // The rows are the request's last keys: at least as many keys as rows (the bias hides the
    // extra ones of a non-causal request whose rows see fewer cells).
    const std::int64_t len = std::max<std::int64_t>(tail.end, last - first + 1);
    out.seq_lens[b] = static_cast<std::int32_t>(len);
    if (out.causal) {  // row r at position tail.end - 1 - (last - r): its own end or past it
      for (std::int32_t r = first; r <= last; ++r) {
        reach.push_back(RowSpan{spans[static_cast<std::size_t>(r)].begin, tail.end - (last - r)});
      }
    } else {
      reach.push_back(RowSpan{tail.begin, len});
    }
  }
  out.window_left = covering_window(reach);
  return out;
}

bool causal_shape(const ggml_tensor* mask, std::int64_t rows, std::int64_t streams,
                  std::int64_t n_kv, CausalShape& out) {
  if (mask == nullptr || rows < 1 || streams < 1) return false;
  // Streams that share a mask plane (ne[3] == 1) share its shape: each plane is read once.
  const std::int64_t planes = std::min(streams, mask->ne[3]);
  std::int64_t window = -1;      // window_left, once some row starts after cell 0
  std::int64_t window_min = -1;  // the least window_left under which every row read so far that
                                 // starts at cell 0 does: its largest position
  out.seq_lens.resize(static_cast<std::size_t>(streams));
  for (std::int64_t s = 0; s < planes; ++s) {
    std::int64_t e = 0;  // row 0's end: row i must end at e + i, on every head
    for (std::int64_t h = 0; h < mask->ne[2]; ++h) {
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::optional<VisibleRun> run = one_run(mask_row(mask, i, h, s), n_kv);
        if (!run) return false;
        if (h == 0 && i == 0) e = run->end;
        if (run->end != e + i) return false;
        const std::int64_t position = e + i - 1;  // the row's own cell
        if (run->begin == 0) {
          if (window >= 0 && position > window) return false;  // its window starts after 0
          window_min = std::max(window_min, position);
        } else if (window < 0) {
          window = position - run->begin;
          if (window < window_min) return false;  // an earlier row should have started later
        } else if (run->begin != position - window) {
          return false;
        }
      }
    }
    out.seq_lens[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(e + rows - 1);
  }
  for (std::int64_t s = planes; s < streams; ++s) {
    out.seq_lens[static_cast<std::size_t>(s)] = out.seq_lens[static_cast<std::size_t>(s % planes)];
  }
  out.window_left = static_cast<std::int32_t>(window);
  return true;
}

}  // namespace leanattn::llama_cpp
