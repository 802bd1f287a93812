// The producer half of the decode kernel: cp.async 16-byte copies of the query rows of a GQA group
// and of K and V pipeline stages into swizzled shared-memory tiles (16-bit caches), or into
// row-major 8-bit stages with the tokens' K and V scales (4-byte copies; 8-bit caches, converted
// by collective/kv8_convert.cuh). Keys outside the segment's
// token range (the tail of the last block) are zero-filled and never read from memory, so a
// block table's unused entries (-1) and the bytes past a request's cache are never touched.
// Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/collective/ptx.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/kv_rows.hpp"
#include "cuda/common/row_rules.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct TileLoader {
  // q_tile [kRows][head_dim] <- the Q rows of pair rows row0 + r of (request, kv_head) (query
  // token and head: pair_row; rq: the request's queries and where they live); rows at or past
  // the pair's end (rq.rows) are zero-filled.
  __device__ static void load_q(T* q_tile, const KernelParams& p, const RequestQueries& rq,
                                int kv_head, int row0, int thread) {
    const T* q = static_cast<const T*>(p.q);
#pragma unroll
    for (int i = 0; i < Shape::kQLoadsPerThread; ++i) {
      const ChunkCoord c = load_coord(thread, i, Shape::kThreads, Shape::kChunksPerRow);
      const int row = row0 + c.row;
      const bool valid = row < rq.rows;
      const PairRow pr = pair_row(valid ? row : 0, kv_head, p.heads);
      const T* src = valid
                         ? q + rq.batch * p.q_stride_batch +
                               (static_cast<std::int64_t>(rq.token) + pr.token) * p.q_stride_token +
                               pr.head * p.q_stride_head + c.chunk * Shape::kChunkElems
                         : q;
      ptx::cp_async_16(
          ptx::smem_address(q_tile + swizzled_offset(c.row, c.chunk * 8, Shape::kChunksPerRow)),
          src, valid);
    }
  }

  // Element type of K and V in memory (8-bit caches: their bytes).
  using KvT = std::conditional_t<Shape::kKv8, std::uint8_t, T>;

  // k_tile [kBlockN][head_dim], v_tile [kBlockN][head_dim_v] <- K and V of tokens block_begin +
  // row, for the rows inside `range`; the others are zero-filled. 16-bit: swizzled; 8-bit:
  // row-major, and scales [2][kBlockN] <- the K and V scales of the same tokens (zero outside the
  // range). V's copies go with the first head_dim_v / 8 of each K row's chunks; VFromK: none (the
  // warps read V from k_tile).
  __device__ static void load_kv(KvT* k_tile, KvT* v_tile, float* scales, const KernelParams& p,
                                 int request, int kv_head, std::int64_t block_begin,
                                 TokenRange range, int thread) {
    if constexpr (Shape::kKv8) {
      if (thread < Shape::kBlockN) {
        const std::int64_t token = block_begin + thread;
        const bool valid = key_in_range(token, range);
        const KvRowOffsets off = valid ? kv_row_offsets(p.k_scale_at, p.v_scale_at, p.page, request,
                                                        static_cast<std::int32_t>(token), kv_head)
                                       : KvRowOffsets{0, 0};
        ptx::cp_async_4(ptx::smem_address(scales + thread), p.k_scale + off.k, valid);
        ptx::cp_async_4(ptx::smem_address(scales + Shape::kBlockN + thread), p.v_scale + off.v,
                        valid);
      }
    }
    const KvT* k = static_cast<const KvT*>(p.k_cache);
    const KvT* v = static_cast<const KvT*>(p.v_cache);
    // kKvLoadBatch loads at a time: their row offsets (the block-table reads of a paged cache)
    // first, all independent, then their copies; the batches stay in a rolled loop (registers).
    constexpr int kBatch = Shape::kKvLoadBatch;
#pragma unroll 1
    for (int i0 = 0; i0 < Shape::kStageLoadsPerThread; i0 += kBatch) {
      KvRowOffsets off[kBatch];
      bool valid[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const ChunkCoord c = load_coord(thread, i0 + u, Shape::kThreads, Shape::kLoadChunksPerRow);
        const std::int64_t token = block_begin + c.row;
        valid[u] = key_in_range(token, range);
        off[u] = valid[u] ? kv_row_offsets(p.k, p.v, p.page, request,
                                           static_cast<std::int32_t>(token), kv_head)
                          : KvRowOffsets{0, 0};
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const ChunkCoord c = load_coord(thread, i0 + u, Shape::kThreads, Shape::kLoadChunksPerRow);
        const int at = Shape::kKv8 ? c.row * Shape::kHeadDim + c.chunk * Shape::kLoadChunkElems
                                   : swizzled_offset(c.row, c.chunk * 8, Shape::kChunksPerRow);
        const std::int64_t chunk = c.chunk * Shape::kLoadChunkElems;
        ptx::cp_async_16(ptx::smem_address(k_tile + at), valid[u] ? k + off[u].k + chunk : k,
                         valid[u]);
        if constexpr (!Shape::kVFromK) {
          if (Shape::kLoadVChunksPerRow == Shape::kLoadChunksPerRow ||
              c.chunk < Shape::kLoadVChunksPerRow) {
            const int at_v = Shape::kLoadVChunksPerRow == Shape::kLoadChunksPerRow
                                 ? at
                                 : swizzled_offset(c.row, c.chunk * 8, Shape::kVChunksPerRow);
            ptx::cp_async_16(ptx::smem_address(v_tile + at_v), valid[u] ? v + off[u].v + chunk : v,
                             valid[u]);
          }
        }
      }
    }
  }
};

}  // namespace leanattn::cuda
