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

std::vector<std::int64_t> tile_weights(const std::vector<std::int32_t>& rows,
                                       std::int64_t kv_row_bytes, std::int32_t head_dim,
                                       std::int32_t head_dim_v) {
  std::vector<std::int64_t> weights;
  weights.reserve(rows.size());
  std::int64_t common = 0;  // over the requests with rows: the others plan no tile
  for (const std::int32_t r : rows) {
    weights.push_back(r == 0 ? 0
                             : kv_row_bytes * kFmasPerKvByte +
                                   static_cast<std::int64_t>(r) * (head_dim + head_dim_v));
    common = std::gcd(common, weights.back());
  }
  for (std::int64_t& w : weights) w = w == 0 ? 1 : w / common;
  return weights;
}

}  // namespace leanattn
