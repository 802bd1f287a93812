// Where a K or V row lives: the element offset of (request, token, KV head) for the contiguous
// and the paged layouts. Shared by the plan interpreter, the CPU engine and the CUDA kernels
// (host and device). The fp64 reference computes addresses on its own, so a bug here shows up
// as a mismatch.
#pragma once

#include <cstdint>

#include "leanattn/core/host_device.hpp"

namespace leanattn {

struct KvAddressing {
  std::int64_t outer_stride;        // elements between requests (contiguous) or pages (paged)
  std::int64_t token_stride;        // elements between tokens of a request / rows of a page
  std::int64_t head_stride;         // elements between KV heads
  std::int32_t page_size;           // 0 for the contiguous layout
  const std::int32_t* block_table;  // paged: [batch, max_pages]; null when contiguous
  std::int64_t block_table_stride;  // elements between block-table rows

  // Element offset of K or V [request, token, kv_head, 0].
  LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE std::int64_t row(std::int32_t request,
                                                             std::int64_t token,
                                                             std::int32_t kv_head) const {
    if (page_size == 0)
      return request * outer_stride + token * token_stride + kv_head * head_stride;
    const std::int64_t page = block_table[request * block_table_stride + token / page_size];
    return page * outer_stride + (token % page_size) * token_stride + kv_head * head_stride;
  }
};

}  // namespace leanattn
