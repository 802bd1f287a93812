// RowWalk: the K or V rows of one (request, KV head), token after token, for the CPU engine's
// per-block loops (the kernel's row pointers: fill_rows; the engine's prefetch addresses). The same
// offsets as KvAddressing::row, without its division per token on paged caches: one division when
// the walk starts, then a block-table load per row.
#pragma once

#include <cstdint>

#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cpu {

class RowWalk {
 public:
  RowWalk(const KvAddressing& a, std::int32_t request, std::int64_t token, std::int32_t head)
      : a_(a) {
    if (a.page_size == 0) {
      fixed_ = a.row(request, token, head);
    } else {
      table_ = a.block_table + request * a.block_table_stride;
      slot_ = token / a.page_size;
      in_page_ = token - slot_ * a.page_size;
      fixed_ = head * a.head_stride;
    }
  }

  // Element offset of the current token's row (KvAddressing::row).
  std::int64_t offset() const {
    if (a_.page_size == 0) return fixed_;
    return table_[slot_] * a_.outer_stride + in_page_ * a_.token_stride + fixed_;
  }

  // On to the next token. Reads no block-table entry: a walk may step one past its last token.
  void next() {
    if (a_.page_size == 0) {
      fixed_ += a_.token_stride;
    } else if (++in_page_ == a_.page_size) {
      in_page_ = 0;
      ++slot_;
    }
  }

 private:
  const KvAddressing& a_;
  const std::int32_t* table_ = nullptr;
  std::int64_t slot_ = 0;     // paged: index of the token's page in the request's table row
  std::int64_t in_page_ = 0;  // paged: the token's row within its page
  std::int64_t fixed_ = 0;    // contiguous: the row's offset; paged: the head's offset
};

// rows[j] = the row of token t0 + j of `head` for j < count, then the last row repeated up to
// `fill`; without a multiply (contiguous) or a division (paged) per row: the kernel's row
// pointers of a block.
template <class T>
inline void fill_rows(const KvAddressing& a, const T* base, std::int32_t request, std::int64_t t0,
                      std::int32_t head, std::int32_t count, std::int32_t fill, const T** rows) {
  if (a.page_size == 0) {
    const T* first = base + a.row(request, t0, head);
    for (std::int32_t j = 0; j < count; ++j) rows[j] = first + j * a.token_stride;
  } else {
    RowWalk walk(a, request, t0, head);
    for (std::int32_t j = 0; j < count; ++j, walk.next()) rows[j] = base + walk.offset();
  }
  for (std::int32_t j = count; j < fill; ++j) rows[j] = rows[count - 1];
}

}  // namespace leanattn::cpu
