// The index arithmetic of the decode kernel that does not touch memory: a segment's token range
// (its key positions come from the host: Plan::tile_keys), its pipeline blocks, which tokens a warp
// computes, the key mask, the shared-memory swizzle and which 16-byte chunk each thread loads.
// Host/device (LEANATTN_HOST_DEVICE), so the kernel (src/cuda/kernel, src/cuda/collective) and the
// CPU tests (tests/cuda) run the same code.
#pragma once

#include <cstdint>

#include "leanattn/core/host_device.hpp"

namespace leanattn::cuda {

// Tokens [begin, end) of a request.
struct TokenRange {
  std::int64_t begin;
  std::int64_t end;
  LEANATTN_HOST_DEVICE constexpr bool empty() const { return end <= begin; }
  LEANATTN_HOST_DEVICE constexpr std::int64_t size() const { return end > begin ? end - begin : 0; }
};

// Pipeline blocks of block_n tokens covering a range (the last one may be partial).
LEANATTN_HOST_DEVICE constexpr std::int32_t block_count(TokenRange r, std::int32_t block_n) {
  return static_cast<std::int32_t>((r.size() + block_n - 1) / block_n);
}

// First token of step `step` (0 .. steps_per_warp - 1) of warp column `warp_n` in the block that
// starts at block_begin. Steps are interleaved over the warp columns: with 4 columns, block tokens
// [0, 16) go to column 0, [16, 32) to column 1, ..., [64, 80) to column 0 again.
LEANATTN_HOST_DEVICE constexpr std::int64_t warp_step_begin(std::int64_t block_begin, int warp_n,
                                                            int step, int warps_n,
                                                            int step_tokens) {
  return block_begin + static_cast<std::int64_t>(step * warps_n + warp_n) * step_tokens;
}

// A key takes part in the softmax only inside the segment's range; the tail of the last block
// (past the request's length, or past the segment's last tile) is masked to -inf.
LEANATTN_HOST_DEVICE constexpr bool key_in_range(std::int64_t token, TokenRange r) {
  return token >= r.begin && token < r.end;
}

// Keys of the step of step_tokens tokens starting at token0 (inside or past the range) that are
// inside the range: the first `result` tokens of the step; 0 when the step is past the range.
LEANATTN_HOST_DEVICE constexpr int step_valid_keys(std::int64_t token0, TokenRange r,
                                                   int step_tokens) {
  const std::int64_t left = r.end - token0;
  return left <= 0 ? 0 : left >= step_tokens ? step_tokens : static_cast<int>(left);
}

// Shared-memory rows are head_dim 16-bit elements = chunks_per_row 16-byte chunks (8 or more).
// Chunk c of row r is stored at chunk c ^ (r % 8): the 8 rows an ldmatrix phase reads at one
// logical chunk land in 8 different bank groups.
LEANATTN_HOST_DEVICE constexpr int swizzle_chunk(int row, int chunk) {
  return chunk ^ (row & 7);
}

// Element offset of (row, element col) in a swizzled tile with `chunks_per_row` chunks per row;
// col is a multiple of 8 for 16-byte accesses.
LEANATTN_HOST_DEVICE constexpr int swizzled_offset(int row, int col, int chunks_per_row) {
  return row * chunks_per_row * 8 + swizzle_chunk(row, col / 8) * 8 + col % 8;
}

// The (row, chunk) that thread `thread` copies in its load number `i` of a tile of rows with
// `chunks_per_row` chunks: consecutive threads take consecutive chunks of a row, so a warp reads
// whole rows (coalesced 16-byte loads).
struct ChunkCoord {
  int row;
  int chunk;
};

LEANATTN_HOST_DEVICE constexpr ChunkCoord load_coord(int thread, int i, int threads,
                                                     int chunks_per_row) {
  const int index = thread + i * threads;
  return {index / chunks_per_row, index % chunks_per_row};
}

}  // namespace leanattn::cuda
