// The three ways of dealing tiles to workers (see pieces.hpp). Pure functions of the pair line.
#include <algorithm>
#include <queue>
#include <utility>

#include "leanattn/core/ceil_div.hpp"
#include "pieces.hpp"

namespace leanattn::planner {

PairLine make_pair_line(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                        std::int32_t tile_tokens, const TileCosts& costs) {
  PairLine line;
  const std::size_t pairs = seq_lens.size() * static_cast<std::size_t>(kv_heads);
  line.tiles.reserve(pairs);
  line.prefix.reserve(pairs + 1);
  line.prefix.push_back(0);
  if (!costs.empty()) line.start.push_back(0);
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const auto n = static_cast<std::int32_t>(ceil_div<std::int64_t>(seq_lens[b], tile_tokens));
    for (std::int32_t h = 0; h < kv_heads; ++h) {
      line.tiles.push_back(n);
      line.prefix.push_back(line.prefix.back() + n);
      if (costs.empty()) continue;
      for (std::int32_t t = 0; t < n; ++t) line.start.push_back(line.start.back() + costs[b][t]);
    }
  }
  return line;
}

namespace {

// Worker whose lean range [floor(w T / G), floor((w + 1) T / G)) holds line position x < T: the
// largest w with floor(w T / G) <= x, i.e. ceil((x + 1) G / T) - 1.
// A mixed batch's costs are FMAs: a position times the workers is taken in 128 bits.
__extension__ using Wide = __int128;

std::int32_t lean_owner(std::int64_t x, std::int64_t total, std::int32_t workers) {
  return static_cast<std::int32_t>(((static_cast<Wide>(x) + 1) * workers - 1) / total);
}

std::int64_t lean_begin(std::int32_t w, std::int64_t total, std::int32_t workers) {
  return static_cast<std::int64_t>(static_cast<Wide>(w) * total / workers);
}

// Worker that writes an empty pair's output: the one holding the next tile on the line (the
// last tile when nothing follows), so that it sits between its neighbours in pair order.
std::int32_t empty_owner(std::int64_t position, std::int64_t total, std::int32_t workers) {
  if (total == 0) return 0;
  return lean_owner(std::min(position, total - 1), total, workers);
}

// Pieces dealt on the line of tile rows (one "pair" per request) become one piece per KV head,
// each with the row's tile range.
WorkerPieces pieces_for_every_head(const WorkerPieces& by_request, std::int32_t kv_heads) {
  WorkerPieces out(by_request.size());
  for (std::size_t w = 0; w < by_request.size(); ++w) {
    for (const Piece& pc : by_request[w]) {
      for (std::int32_t h = 0; h < kv_heads; ++h) {
        out[w].push_back({pc.pair * kv_heads + h, pc.tile_begin, pc.tile_end});
      }
    }
  }
  return out;
}

}  // namespace

WorkerPieces lean_partition(const PairLine& line, std::int32_t workers) {
  WorkerPieces out(static_cast<std::size_t>(workers));
  const std::int64_t total = line.total_cost();
  for (std::int64_t p = 0; p < line.pairs(); ++p) {
    const std::int64_t at = line.prefix[p];  // the pair's first tile on the line
    const std::int32_t n = line.tiles[p];
    const std::int64_t begin = line.start_of(at);
    if (n == 0) {
      out[empty_owner(begin, total, workers)].push_back({p, 0, 0});
      continue;
    }
    // Tile t starts at cost start_of(at + t): worker w takes the tiles starting in its range.
    auto first_tile_from = [&](std::int64_t x) {
      if (line.start.empty()) {
        return static_cast<std::int32_t>(std::clamp<std::int64_t>(x - at, 0, n));
      }
      const auto tiles = line.start.begin() + at;
      return static_cast<std::int32_t>(std::lower_bound(tiles, tiles + n, x) - tiles);
    };
    const std::int32_t first = lean_owner(begin, total, workers);
    const std::int32_t last = lean_owner(line.start_of(at + n - 1), total, workers);
    for (std::int32_t w = first; w <= last; ++w) {
      const std::int32_t lo = first_tile_from(lean_begin(w, total, workers));
      const std::int32_t hi = first_tile_from(lean_begin(w + 1, total, workers));
      if (lo == hi) continue;  // a worker with an empty range (more workers than tiles)
      out[w].push_back({p, lo, hi});
    }
  }
  return out;
}

WorkerPieces chunked_partition(const PairLine& line, std::int32_t workers,
                               std::int32_t chunk_tiles) {
  WorkerPieces out(static_cast<std::size_t>(workers));
  const std::int64_t total = line.total();
  for (std::int64_t p = 0; p < line.pairs(); ++p) {
    const std::int32_t n = line.tiles[p];
    if (n == 0) {
      out[empty_owner(line.prefix[p], total, workers)].push_back({p, 0, 0});
      continue;
    }
    for (std::int32_t t = 0; t < n; t += chunk_tiles) {
      const std::int32_t w = lean_owner(line.prefix[p] + t, total, workers);
      out[w].push_back({p, t, std::min(n, t + chunk_tiles)});
    }
  }
  return out;
}

WorkerPieces lean_partition_rows(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                                 std::int32_t tile_tokens, std::int32_t workers,
                                 const TileCosts& costs) {
  // One "pair" per request on the row line: its tiles are the request's tile rows.
  const PairLine rows = make_pair_line(seq_lens, 1, tile_tokens, costs);
  return pieces_for_every_head(lean_partition(rows, workers), kv_heads);
}

WorkerPieces chunked_partition_rows(const std::vector<std::int32_t>& seq_lens,
                                    std::int32_t kv_heads, std::int32_t tile_tokens,
                                    std::int32_t workers, std::int32_t chunk_tiles) {
  const PairLine rows = make_pair_line(seq_lens, 1, tile_tokens);
  return pieces_for_every_head(chunked_partition(rows, workers, chunk_tiles), kv_heads);
}

WorkerPieces list_schedule(const PairLine& line, std::int32_t workers, std::int64_t chunk_tiles) {
  WorkerPieces out(static_cast<std::size_t>(workers));
  // (load in tiles, worker): the smallest load is free first; ties go to the lower worker.
  using Slot = std::pair<std::int64_t, std::int32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at;
  for (std::int32_t w = 0; w < workers; ++w) free_at.push({0, w});
  auto deal = [&](std::int64_t pair, std::int32_t b, std::int32_t e) {
    auto [load, w] = free_at.top();
    free_at.pop();
    out[w].push_back({pair, b, e});
    free_at.push({load + (e - b), w});
  };
  for (std::int64_t p = 0; p < line.pairs(); ++p) {
    const std::int32_t n = line.tiles[p];
    if (n == 0) {
      deal(p, 0, 0);
      continue;
    }
    for (std::int64_t t = 0; t < n; t += chunk_tiles) {
      deal(p, static_cast<std::int32_t>(t),
           static_cast<std::int32_t>(std::min<std::int64_t>(n, t + chunk_tiles)));
    }
  }
  return out;
}

WorkerPieces contiguous_rows(const std::vector<std::int32_t>& seq_lens, std::int32_t kv_heads,
                             std::int32_t tile_tokens, std::int32_t workers,
                             std::int64_t chunk_tiles) {
  WorkerPieces out(static_cast<std::size_t>(workers));
  const PairLine rows = make_pair_line(seq_lens, 1, tile_tokens);
  const std::int64_t total = rows.total() * kv_heads;
  std::int64_t position = 0;  // tiles before this chunk, in request -> chunk -> head order
  for (std::int64_t b = 0; b < rows.pairs(); ++b) {
    const std::int32_t n = rows.tiles[b];
    for (std::int64_t t = 0; t == 0 || t < n; t += chunk_tiles) {
      const auto e = static_cast<std::int32_t>(std::min<std::int64_t>(n, t + chunk_tiles));
      const std::int64_t len = e - t;
      for (std::int32_t h = 0; h < kv_heads; ++h) {
        // The midpoint 2 x position + len, in half tiles (an empty chunk's is its position, so
        // that it sits between its neighbours' workers).
        const std::int32_t w =
            total == 0 ? 0
                       : static_cast<std::int32_t>(std::min<std::int64_t>(
                             workers - 1, (2 * position + len) * workers / (2 * total)));
        out[w].push_back({b * kv_heads + h, static_cast<std::int32_t>(t), e});
        position += len;
      }
    }
  }
  return out;
}

}  // namespace leanattn::planner
