// Internal to the planner: the strategies first deal *pieces* (a tile range of one pair) to
// workers; assemble_plan() then turns the pieces into segments, reductions and slots, the same
// way for every strategy.
#pragma once

#include <cstdint>
#include <vector>

#include "leanattn/plan.hpp"

namespace leanattn::planner {

struct Piece {
  std::int64_t pair = 0;  // request * kv_heads + kv_head
  std::int32_t tile_begin = 0;
  std::int32_t tile_end = 0;
};

// pieces[w]: worker w's pieces in the order it runs them.
using WorkerPieces = std::vector<std::vector<Piece>>;

// Tiles of each pair and their running sum, over the actual lengths: pair p = (request b, head h)
// with p = b * kv_heads + h has tiles[p] = ceil(seq_lens[b] / tile_tokens) and starts at
// position prefix[p] on the line of all tiles; prefix has pairs + 1 entries. Lean cuts the line
// by cost: start[x] is the cost of the tiles before line position x (tile_cost in
// heuristics.hpp: a mixed batch's prefill tiles cost more than its decode tiles, a causal
// chunk's last tiles less than its first); empty when every tile costs 1 (start[x] = x).
struct PairLine {
  std::vector<std::int32_t> tiles;
  std::vector<std::int64_t> prefix;
  std::vector<std::int64_t> start;  // [total() + 1] or empty
  std::int64_t pairs() const { return static_cast<std::int64_t>(tiles.size()); }
  std::int64_t total() const { return prefix.back(); }
  std::int64_t start_of(std::int64_t x) const { return start.empty() ? x : start[x]; }
  std::int64_t total_cost() const { return start_of(total()); }
};

// The cost of each tile of each request: costs[b][t] for request b's tiles (the same for every
// KV head; lean_tile_costs in planner.hpp); empty: 1 each.
using TileCosts = std::vector<std::vector<std::int64_t>>;

PairLine make_pair_line(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                        std::int32_t tile_tokens, const TileCosts& costs = {});

// lean, head_major: cut the line of costs into `workers` contiguous ranges [floor(w C / G),
// floor((w + 1) C / G)), a tile going to the range that holds its first unit of cost (with
// equal costs: the tiles' own ranges [floor(w T / G), floor((w + 1) T / G))).
WorkerPieces lean_partition(const PairLine& line, std::int32_t workers);

// lean, token_major: the line of tile rows (request, tile), each row holding the tile of every
// KV head, cut into `workers` ranges of rows the same way; a worker gets one piece per KV head
// of every request its rows touch, all with the same tile range.
WorkerPieces lean_partition_rows(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                                 std::int32_t tile_tokens, std::int32_t workers,
                                 const TileCosts& costs = {});

// batch-invariant lean: cut each pair into chunks of chunk_tiles tiles; deal each chunk whole to
// the worker whose lean range holds its first tile (head_major), or each chunk row (all heads of
// those tiles) to the worker whose row range holds its first row (token_major).
WorkerPieces chunked_partition(const PairLine& line, std::int32_t workers,
                               std::int32_t chunk_tiles);
WorkerPieces chunked_partition_rows(const std::vector<std::int32_t>& seq_lens,
                                    std::int32_t kv_heads, std::int32_t tile_tokens,
                                    std::int32_t workers, std::int32_t chunk_tiles);

// split / head: cut each pair into chunks of chunk_tiles tiles (head: one chunk per pair) and
// deal them in pair order to the worker that becomes free first (greedy list scheduling: what a
// GPU's block scheduler does with a grid of independent blocks).
WorkerPieces list_schedule(const PairLine& line, std::int32_t workers, std::int64_t chunk_tiles);

// split / head in token_major order: cut each pair into chunks of chunk_tiles tiles and number
// the chunks request -> chunk -> KV head (a chunk row holds every head's chunk of the same
// tokens); each chunk goes to the worker whose equal share [w T / G, (w + 1) T / G) of the tiles
// holds its midpoint. Workers get contiguous runs of chunks, so they read whole (or the same
// part of) token rows and consecutive heads, with loads within one chunk of each other.
WorkerPieces contiguous_rows(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                             std::int32_t tile_tokens, std::int32_t workers,
                             std::int64_t chunk_tiles);

// Segments, reductions and slots from dealt pieces (see plan.hpp).
void assemble_plan(Plan& plan, const WorkerPieces& pieces);

}  // namespace leanattn::planner
