// The planner heuristics give the values their documentation promises.
#include "leanattn/heuristics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "leanattn/core/variant_rules.hpp"

namespace leanattn {
namespace {

TEST(Heuristics, DefaultTileTokens) {
  EXPECT_EQ(default_tile_tokens(64), 256);
  EXPECT_EQ(default_tile_tokens(16), 256);
  EXPECT_EQ(default_tile_tokens(128), 128);
  EXPECT_EQ(default_tile_tokens(96), 128);
  EXPECT_EQ(default_tile_tokens(256), 64);
  EXPECT_EQ(default_tile_tokens(128, 128), 128);  // V as wide as K: as before
  EXPECT_EQ(default_tile_tokens(96, 32), 256);    // mean 64
  EXPECT_EQ(default_tile_tokens(192, 64), 128);   // mean 128
  EXPECT_EQ(default_tile_tokens(192, 128), 64);   // DeepSeek's K 192 / V 128: mean 160
  EXPECT_EQ(default_tile_tokens(576, 512), 64);   // absorbed MLA
}

TEST(Heuristics, TileCostWorkedExample) {
  // SmolLM2's 9/3 heads, d 64, f16, 256-key tiles (heuristics.hpp).
  const TileQueries chunk{4608, 512, true, -1};
  EXPECT_EQ(visible_pairs(chunk, 4352, 4608), 32896);
  EXPECT_EQ(tile_cost({4097, 1, true, -1}, 0, 256, 3, 256, 64, 64), 196608);  // a decode token
  EXPECT_EQ(tile_cost(chunk, 0, 256, 3, 256, 64, 64), 50331648);
  EXPECT_EQ(tile_cost(chunk, 4352, 4608, 3, 256, 64, 64), 12632064);
}

// visible_pairs against counting every (token, key) pair by the variant rules themselves.
TEST(Heuristics, VisiblePairsCountsWhatTheRulesShow) {
  for (const bool causal : {true, false}) {
    for (const std::int32_t window : {-1, 0, 5, 40}) {
      for (const std::int32_t queries : {1, 3, 37}) {
        for (const std::int64_t seq_len : {std::int64_t{queries}, std::int64_t{100}}) {
          for (std::int64_t t0 = 0; t0 < seq_len; t0 += 16) {
            const std::int64_t t1 = std::min<std::int64_t>(t0 + 16, seq_len);
            std::int64_t count = 0;
            for (std::int32_t j = 0; j < queries; ++j) {
              const KeyRange r = visible_keys(seq_len, queries, j, causal, window);
              count += std::max<std::int64_t>(0, std::min(r.end, t1) - std::max(r.begin, t0));
            }
            EXPECT_EQ(visible_pairs({seq_len, queries, causal, window}, t0, t1), count)
                << "causal " << causal << " window " << window << " queries " << queries
                << " seq_len " << seq_len << " keys " << t0;
          }
        }
      }
    }
  }
}

TEST(Heuristics, Fa2SplitsWorkedExample) {
  // 1 request x 8 KV heads on 132 workers, 1024 tiles: 14 splits (see heuristics.hpp).
  EXPECT_EQ(fa2_num_splits(8, 132, 1024, 128), 14);
}

TEST(Heuristics, Fa2SplitsOneWhenTheMachineIsFull) {
  EXPECT_EQ(fa2_num_splits(106, 132, 1024, 128), 1);  // 106 >= 0.8 x 132
  EXPECT_EQ(fa2_num_splits(2, 2, 4096, 128), 1);
  EXPECT_EQ(fa2_num_splits(8, 2, 4096, 128), 1);
}

TEST(Heuristics, CpuSplitsWorkedExamples) {
  // The examples of heuristics.hpp: rows (requests), workers, max_tiles, max_splits.
  EXPECT_EQ(cpu_num_splits(1, 2, 2048, 128), 2);   // batch 1 (GQA or MQA): two halves
  EXPECT_EQ(cpu_num_splits(4, 2, 128, 128), 1);    // batch 4: 2 + 2 requests
  EXPECT_EQ(cpu_num_splits(3, 2, 2048, 128), 2);   // 3 + 3 rows instead of 2 + 1
  EXPECT_EQ(cpu_num_splits(5, 16, 2048, 128), 3);  // 15 rows on 16 workers, eff 0.94
  EXPECT_EQ(cpu_num_splits(1, 2, 1, 128), 1);      // a single tile cannot be split
}

TEST(Heuristics, CpuSplitsBalanceAndBounds) {
  for (std::int64_t rows = 1; rows <= 40; ++rows) {
    for (std::int32_t workers = 1; workers <= 40; ++workers) {
      for (std::int64_t tiles : {1, 2, 5, 1000}) {
        const std::int32_t s = cpu_num_splits(rows, workers, tiles, 128);
        ASSERT_GE(s, 1);
        ASSERT_LE(s, std::max<std::int64_t>(1, tiles));
        if (tiles == 1000) {  // unbounded by tiles: balanced to 0.9, or exactly
          const double per = static_cast<double>(rows * s) / workers;
          EXPECT_GE(per / std::ceil(per), 0.9) << rows << " rows, " << workers << " workers";
        }
      }
    }
  }
}

TEST(Heuristics, Fa2SplitsBoundedByTilesAndWorkers) {
  EXPECT_EQ(fa2_num_splits(1, 2, 4096, 128), 2);  // one pair on two workers: 2 splits
  EXPECT_EQ(fa2_num_splits(1, 132, 1, 128), 1);   // a single tile cannot be split
  EXPECT_LE(fa2_num_splits(1, 132, 3, 128), 3);
}

}  // namespace
}  // namespace leanattn

namespace leanattn {
namespace {

TEST(Heuristics, GpuTilesShrinkWhileThereAreFewerTilesThanWorkers) {
  // The worked example of heuristics.hpp: 16/1 d64 batch 1, 264 workers.
  EXPECT_EQ(gpu_tile_tokens(64, 1, {4096}, 264, 32), 32);
  EXPECT_EQ(gpu_tile_tokens(64, 1, {131072}, 264, 32), 256);
  EXPECT_EQ(gpu_tile_tokens(64, 1, {4096}, 16, 32), 256);   // enough tiles: the default
  EXPECT_EQ(gpu_tile_tokens(128, 8, {4096}, 264, 32), 64);  // 8 x 32 = 256 < 264 -> 8 x 64
  EXPECT_EQ(gpu_tile_tokens(128, 1, {0}, 264, 32), 32);     // no tokens: down to the minimum
}

}  // namespace
}  // namespace leanattn
