// Element offsets of the K and V rows of one token, as the decode kernel's loads compute them:
// KvAddressing::row() (core/kv_addressing.hpp) for the contiguous layout; for the paged layout
// one block-table read serves both K and V, and the 64-bit division by page_size becomes a
// multiply-high by a magic number (FastDivider, computed on the host once per launch).
// Host/device; tests/cuda/tile_math_test.cpp checks it against KvAddressing::row().
#pragma once

#include <cstdint>

#include "leanattn/core/host_device.hpp"
#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cuda {

// Division of n in [0, 2^31) by a divisor in [1, 2^31) (Granlund and Montgomery, as in CUTLASS's
// FastDivmod): q = (umulhi(n, magic) + n) >> shift.
struct FastDivider {
  std::uint32_t divisor = 1;
  std::uint32_t magic = 1;
  std::uint32_t shift = 0;

  static constexpr FastDivider make(std::uint32_t d) {
    std::uint32_t s = 0;
    while ((std::uint64_t{1} << s) < d) ++s;  // s = ceil(log2(d))
    const std::uint64_t m = ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << s) - d)) / d + 1;
    return {d, static_cast<std::uint32_t>(m), s};
  }

  LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE std::uint32_t divide(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t hi = __umulhi(n, magic);
#else
    const auto hi = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * magic) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

struct KvRowOffsets {
  std::int64_t k;
  std::int64_t v;
};

// Offsets of K[request, token, kv_head, 0] and V[...] (elements). For the paged layout K and V
// share the block table (DecodeTensors has one) and `page` divides by their page_size.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE KvRowOffsets
kv_row_offsets(const KvAddressing& k, const KvAddressing& v, const FastDivider& page,
               std::int32_t request, std::int32_t token, std::int32_t kv_head) {
  if (k.page_size == 0) return {k.row(request, token, kv_head), v.row(request, token, kv_head)};
  const std::uint32_t page_index = page.divide(static_cast<std::uint32_t>(token));
  const auto in_page =
      static_cast<std::int64_t>(static_cast<std::uint32_t>(token) - page_index * page.divisor);
  const std::int64_t page_id = k.block_table[request * k.block_table_stride + page_index];
  return {page_id * k.outer_stride + in_page * k.token_stride + kv_head * k.head_stride,
          page_id * v.outer_stride + in_page * v.token_stride + kv_head * v.head_stride};
}

}  // namespace leanattn::cuda
