// The planner's tuning rules (see heuristics.hpp for the worked examples).
#include "leanattn/heuristics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "leanattn/core/ceil_div.hpp"

namespace leanattn {

std::int32_t default_tile_tokens(std::int32_t head_dim, std::int32_t head_dim_v) {
  const std::int32_t width = head_dim_v > 0 ? (head_dim + head_dim_v) / 2 : head_dim;
  if (width <= 64) return 256;
  if (width <= 128) return 128;
  return 64;
}

std::int32_t gpu_tile_tokens(std::int32_t head_dim, std::int64_t kv_heads,
                             const std::vector<std::int32_t>& seq_lens, std::int32_t workers,
                             std::int32_t min_tokens) {
  auto tiles = [&](std::int32_t t) {
    std::int64_t n = 0;
    for (std::int32_t len : seq_lens) n += ceil_div<std::int64_t>(len, t);
    return n * kv_heads;
  };
  std::int32_t t = default_tile_tokens(head_dim);
  while (t / 2 >= min_tokens && tiles(t) < workers) t /= 2;
  return t;
}

std::int32_t fa2_num_splits(std::int64_t units, std::int32_t workers, std::int64_t max_tiles,
                            std::int32_t max_splits) {
  if (static_cast<double>(units) >= 0.8 * workers) return 1;
  const std::int64_t limit = std::min<std::int64_t>({max_splits, workers, max_tiles});
  if (limit <= 1) return 1;
  // A split count is eligible only if it changes the tiles per split: with 64 tiles, 11 splits
  // give 6 tiles per split and 12 splits would too (the 12th split would be empty).
  auto eligible = [&](std::int64_t s) {
    return s == 1 || ceil_div(max_tiles, s) != ceil_div(max_tiles, s - 1);
  };
  std::vector<double> efficiency(static_cast<std::size_t>(limit) + 1, 0.0);
  double best = 0.0;
  for (std::int64_t s = 1; s <= limit; ++s) {
    if (!eligible(s)) continue;
    const double waves = static_cast<double>(units * s) / workers;
    efficiency[static_cast<std::size_t>(s)] = waves / std::ceil(waves);
    best = std::max(best, efficiency[static_cast<std::size_t>(s)]);
  }
  for (std::int64_t s = 1; s <= limit; ++s) {
    if (eligible(s) && efficiency[static_cast<std::size_t>(s)] >= 0.85 * best) {
      return static_cast<std::int32_t>(s);
    }
  }
  return 1;
}

std::int32_t cpu_num_splits(std::int64_t rows, std::int32_t workers, std::int64_t max_tiles,
                            std::int32_t max_splits) {
  if (rows <= 0 || workers <= 1) return 1;
  const std::int64_t exact = workers / std::gcd(rows, static_cast<std::int64_t>(workers));
  const std::int64_t limit =
      std::max<std::int64_t>(1, std::min<std::int64_t>({max_splits, max_tiles, exact}));
  for (std::int64_t s = 1; s < limit; ++s) {
    const double per_worker = static_cast<double>(rows * s) / workers;
    if (per_worker / std::ceil(per_worker) >= 0.9) return static_cast<std::int32_t>(s);
  }
  return static_cast<std::int32_t>(limit);
}

namespace {

// sum over j in [0, n) of clamp(a + j, 0, length).
std::int64_t sum_clamped(std::int64_t a, std::int64_t n, std::int64_t length) {
  const std::int64_t rising = std::clamp<std::int64_t>(1 - a, 0, n);     // first j with a + j >= 1
  const std::int64_t full = std::clamp<std::int64_t>(length - a, 0, n);  // first with >= length
  const std::int64_t count = full - rising;  // terms a + j, between 1 and length - 1
  return count * a + (rising + full - 1) * count / 2 + (n - full) * length;
}

}  // namespace

std::int64_t visible_pairs(const TileQueries& q, std::int64_t t0, std::int64_t t1) {
  // Keys of [t0, t1) below x: clamp(x - t0, 0, t1 - t0). Token j sees [begin_j, end_j), so its
  // pairs are (keys below end_j) - (keys below begin_j); both bounds rise by one per token.
  const std::int64_t length = t1 - t0, first = q.seq_len - q.queries;  // token 0's position
  const std::int64_t below_end =
      q.causal ? sum_clamped(first + 1 - t0, q.queries, length)
               : q.queries * std::clamp<std::int64_t>(q.seq_len - t0, 0, length);
  const std::int64_t below_begin =
      q.window_left < 0 ? 0 : sum_clamped(first - q.window_left - t0, q.queries, length);
  return below_end - below_begin;
}

std::int64_t tile_cost(const TileQueries& queries, std::int64_t t0, std::int64_t t1,
                       std::int32_t group, std::int64_t kv_row_bytes, std::int32_t head_dim,
                       std::int32_t head_dim_v) {
  return std::max((t1 - t0) * kv_row_bytes * kFmasPerKvByte,
                  group * visible_pairs(queries, t0, t1) * (head_dim + head_dim_v));
}

}  // namespace leanattn
