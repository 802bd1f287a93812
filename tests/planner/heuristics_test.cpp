// The planner heuristics give the values their documentation promises.
#include "leanattn/heuristics.hpp"

#include <gtest/gtest.h>

namespace leanattn {
namespace {

TEST(Heuristics, DefaultTileTokens) {
  EXPECT_EQ(default_tile_tokens(64), 256);
  EXPECT_EQ(default_tile_tokens(16), 256);
  EXPECT_EQ(default_tile_tokens(128), 128);
  EXPECT_EQ(default_tile_tokens(96), 128);
  EXPECT_EQ(default_tile_tokens(256), 64);
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
