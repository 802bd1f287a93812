// The decode kernel's host/device index math (src/cuda/common) compiled as host code: pair rows
// and the keys each row sees (the variants' masks), token ranges and masks of segments, the warps'
// share of a pipeline block, the shared-memory swizzle and load assignment, the fast division by
// page_size and the K/V row offsets it feeds, and the sizes of every compiled configuration, the
// slot merge's fixed order. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "cuda/common/kernel_shape.hpp"
#include "cuda/common/kv_rows.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "cuda/common/row_rules.hpp"
#include "cuda/common/tile_math.hpp"
#include "cuda/kernel_registry.hpp"

namespace leanattn::cuda {
namespace {

// Pair rows are token-major with the GQA group's heads adjacent: every (query token, head of
// the KV head) exactly once.
TEST(RowRules, PairRowsCoverEveryTokenAndHeadOnce) {
  for (int heads : {1, 3, 8}) {
    for (int q_len : {1, 2, 5}) {
      for (int kv_head : {0, 2}) {
        std::set<std::pair<int, int>> seen;
        for (int r = 0; r < q_len * heads; ++r) {
          const PairRow pr = pair_row(r, kv_head, heads);
          EXPECT_GE(pr.token, 0);
          EXPECT_LT(pr.token, q_len);
          EXPECT_EQ(pr.head / heads, kv_head);
          EXPECT_EQ(pr.token * heads + pr.head % heads, r);
          seen.insert({pr.token, pr.head});
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(q_len * heads));
      }
    }
  }
}

// A row sees exactly the keys of the segment's range that visible_keys() gives its query token,
// key by key, for causal and non-causal rows, windows shorter and longer than the request, and
// ranges anywhere in it (lean pieces).
TEST(RowRules, RowKeysAreTheVisibleKeysOfTheRange) {
  for (std::int64_t len : {1, 5, 17, 40}) {
    for (std::int32_t q_len : {1, 2, 5}) {
      if (q_len > len) continue;
      for (bool causal : {true, false}) {
        for (std::int32_t window : {-1, 0, 1, 3, 16, 100}) {
          for (std::int64_t b = 0; b <= len; b += 3) {
            for (std::int64_t e = b; e <= len; e += 4) {
              for (std::int32_t i = 0; i < q_len; ++i) {
                const RowKeys rk = row_keys({b, e}, len, q_len, i, causal, window);
                const KeyRange seen = visible_keys(len, q_len, i, causal, window);
                EXPECT_LE(rk.lo, rk.hi);
                for (std::int64_t k = b - 2; k < e + 2; ++k) {
                  const bool want = k >= b && k < e && k >= seen.begin && k < seen.end;
                  EXPECT_EQ(rk.sees(static_cast<std::int32_t>(k)), want)
                      << "len " << len << " q_len " << q_len << " row " << i << " causal " << causal
                      << " window " << window << " range " << b << ".." << e << " key " << k;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(SegmentTokens, BlocksAndStepsCoverTheRangeOnce) {
  for (std::int64_t len : {1, 15, 16, 17, 63, 64, 65, 200}) {
    const TokenRange r{1000, 1000 + len};
    for (int block_n : {32, 64, 128}) {
      const int blocks = block_count(r, block_n);
      EXPECT_EQ(blocks, (len + block_n - 1) / block_n);
      for (int warps_n : {1, 2, 4}) {
        if (block_n % (16 * warps_n) != 0) continue;
        const int steps = block_n / (16 * warps_n);
        std::vector<int> seen(static_cast<std::size_t>(blocks) * block_n, 0);
        std::int64_t keys = 0;
        for (int b = 0; b < blocks; ++b) {
          const std::int64_t begin = r.begin + static_cast<std::int64_t>(b) * block_n;
          for (int wn = 0; wn < warps_n; ++wn) {
            for (int s = 0; s < steps; ++s) {
              const std::int64_t t0 = warp_step_begin(begin, wn, s, warps_n, 16);
              const int valid = step_valid_keys(t0, r, 16);
              for (int j = 0; j < 16; ++j) {
                ++seen[static_cast<std::size_t>(t0 - r.begin + j)];
                EXPECT_EQ(j < valid, key_in_range(t0 + j, r));
              }
              keys += valid;
            }
          }
        }
        EXPECT_EQ(keys, len);
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }));
      }
    }
  }
}

TEST(StepValidKeys, IsZeroPastTheRangeAndAtMostAStep) {
  const TokenRange r{0, 40};
  EXPECT_EQ(step_valid_keys(0, r, 16), 16);
  EXPECT_EQ(step_valid_keys(32, r, 16), 8);
  EXPECT_EQ(step_valid_keys(48, r, 16), 0);
  EXPECT_EQ(step_valid_keys(40, r, 16), 0);
}

TEST(Swizzle, IsABijectionPerRowAndSpreadsEightRowsOverEightChunks) {
  for (int chunks : {8, 16, 32}) {
    for (int row = 0; row < 64; ++row) {
      std::set<int> physical;
      for (int c = 0; c < chunks; ++c) physical.insert(swizzle_chunk(row, c));
      EXPECT_EQ(static_cast<int>(physical.size()), chunks);
      EXPECT_EQ(*physical.rbegin(), chunks - 1);
    }
    // ldmatrix: 8 lanes read rows r0..r0+7 at one logical chunk; the 8 physical chunks differ,
    // so the 8 16-byte reads fall in 8 different groups of 4 banks.
    for (int r0 = 0; r0 < 64; r0 += 8) {
      for (int c = 0; c < chunks; ++c) {
        std::set<int> banks;
        for (int r = r0; r < r0 + 8; ++r) {
          banks.insert(((r * chunks + swizzle_chunk(r, c)) * 16 / 4) % 32 / 4);
        }
        EXPECT_EQ(banks.size(), 8u) << "chunks " << chunks << " rows " << r0 << " chunk " << c;
      }
    }
  }
  EXPECT_EQ(swizzled_offset(3, 17, 16), 3 * 128 + (2 ^ 3) * 8 + 1);
}

template <class Shape>
void expect_loads_cover_tiles() {
  auto cover = [](int rows, int loads, int chunks_per_row) {
    std::vector<int> seen(static_cast<std::size_t>(rows) * chunks_per_row, 0);
    for (int t = 0; t < Shape::kThreads; ++t) {
      for (int i = 0; i < loads; ++i) {
        const ChunkCoord c = load_coord(t, i, Shape::kThreads, chunks_per_row);
        ASSERT_LT(c.row, rows);
        ++seen[static_cast<std::size_t>(c.row * chunks_per_row + c.chunk)];
      }
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }));
  };
  // K/V stages as loaded (8-bit: 16 elements per chunk; the conversion walks the same chunks).
  cover(Shape::kBlockN, Shape::kStageLoadsPerThread, Shape::kLoadChunksPerRow);
  // V's copies ride along K's: the loads of a row's first kLoadVChunksPerRow chunks copy every V
  // chunk once (none where V is read from K's tile).
  if constexpr (!Shape::kVFromK) {
    std::vector<int> v_seen(static_cast<std::size_t>(Shape::kBlockN) * Shape::kLoadVChunksPerRow);
    for (int t = 0; t < Shape::kThreads; ++t) {
      for (int i = 0; i < Shape::kStageLoadsPerThread; ++i) {
        const ChunkCoord c = load_coord(t, i, Shape::kThreads, Shape::kLoadChunksPerRow);
        if (c.chunk < Shape::kLoadVChunksPerRow) {
          ++v_seen[static_cast<std::size_t>(c.row * Shape::kLoadVChunksPerRow + c.chunk)];
        }
      }
    }
    EXPECT_TRUE(std::all_of(v_seen.begin(), v_seen.end(), [](int x) { return x == 1; }));
  }
  // The warp grid: 4 warps, each with whole k16 steps of V's columns.
  EXPECT_EQ(Shape::kWarpsM * Shape::kWarpsV * Shape::kWarpsN, 4);
  EXPECT_EQ(Shape::kVCols * Shape::kWarpsV, Shape::kHeadDimV);
  cover(Shape::kRows, Shape::kQLoadsPerThread, Shape::kChunksPerRow);
  // The pipeline and the epilogue scratch fit; stages hold whole warp steps.
  EXPECT_LE(Shape::kSmemBytes, 227 * 1024);
  EXPECT_LE(Shape::kScratchEnd, Shape::kSmemBytes);
  EXPECT_EQ(Shape::kBlockN % (16 * Shape::kWarpsN), 0);
  EXPECT_EQ(Shape::kStages, 3);
  // Q overlays V's last stage only when it is read into registers once per pass; it lies inside
  // that stage, outside the stages the prologue fills (0 .. kStages - 2).
  if (Shape::kQOverlaysStage) {
    EXPECT_TRUE(Shape::kQInRegisters);
    EXPECT_GE(Shape::kQOffset,
              Shape::kVOffset + (Shape::kComputeTiles - 1) * Shape::kStageTileBytes);
    EXPECT_LE(Shape::kQOffset + Shape::kQBytes, Shape::kSmemBytes);
    EXPECT_LE(Shape::kSmemBytes, 99 * 1024 - 128) << "fits sm_86 / sm_89";
  } else {
    EXPECT_LE(Shape::kQOffset + Shape::kQBytes, Shape::kKOffset);
  }
  // The last arriver's merge arrays fit, and the capacity holds a lean pair's slots.
  EXPECT_LE(Shape::kMergePartOffset + Shape::kMergePartBytes, Shape::kSmemBytes);
  EXPECT_GE(Shape::kMergeCapacity, 4096);
  EXPECT_EQ(Shape::kKOffset % 128, 0);
  EXPECT_EQ(Shape::kVOffset % 128, 0);
  // 8-bit: the loaded stages and their scales follow the converted tiles, without overlap.
  EXPECT_EQ(Shape::kLoadKOffset % 128, 0);
  EXPECT_EQ(Shape::kLoadVOffset % 128, 0);
  EXPECT_EQ(Shape::kScalesOffset % 128, 0);
  if constexpr (Shape::kKv8) {
    EXPECT_GE(Shape::kLoadKOffset, Shape::kVOffset + Shape::kStageTileBytes);
    EXPECT_GE(Shape::kLoadKOffset, Shape::kQOffset + Shape::kQBytes);
    EXPECT_LE(Shape::kBlockN, Shape::kThreads);
    EXPECT_EQ(Shape::kLoadTileBytes * 2, Shape::kStageTileBytes);
  }
  EXPECT_LE(Shape::kRowRulesOffset, Shape::kSmemBytes);
}

TEST(KernelShape, LoadsCoverEveryChunkOnceAndTheLayoutFits) {
  expect_loads_cover_tiles<KernelShape<64, 1>>();
  expect_loads_cover_tiles<KernelShape<64, 4>>();
  expect_loads_cover_tiles<KernelShape<128, 1>>();
  expect_loads_cover_tiles<KernelShape<128, 2>>();
  expect_loads_cover_tiles<KernelShape<128, 4>>();
  expect_loads_cover_tiles<KernelShape<256, 1>>();
  expect_loads_cover_tiles<KernelShape<256, 4>>();
  expect_loads_cover_tiles<KernelShape<64, 1, 8>>();
  expect_loads_cover_tiles<KernelShape<64, 4, 8>>();
  expect_loads_cover_tiles<KernelShape<128, 1, 8>>();
  expect_loads_cover_tiles<KernelShape<128, 4, 8>>();
  expect_loads_cover_tiles<KernelShape<256, 1, 8>>();
  expect_loads_cover_tiles<KernelShape<256, 4, 8>>();
  expect_loads_cover_tiles<KernelShape<192, 1, 16, 128>>();
  expect_loads_cover_tiles<KernelShape<192, 4, 16, 128>>();
  using Mla = KernelShape<576, 2, 16, 512, 2, true>;
  expect_loads_cover_tiles<Mla>();
  // Absorbed MLA: 16-token stages of K only (V read from them), Q re-read from shared memory,
  // 128 accumulator registers per thread (as head_dim 256), and a CTA that fits sm_86 / sm_89's
  // 99 KiB (so sm_80 too) and leaves two CTAs per SM on sm_90.
  EXPECT_EQ(Mla::kBlockN, 16);
  EXPECT_EQ(Mla::kVStageTileBytes, 0);
  EXPECT_FALSE(Mla::kQInRegisters);
  EXPECT_EQ(Mla::kDimTiles * 4, 128);
  EXPECT_LE(Mla::kSmemBytes + 128, 99 * 1024);
  EXPECT_LE(2 * (Mla::kSmemBytes + 128), 228 * 1024);
}

TEST(KernelShape, CompiledConfigurationsFitAnSmAndMatchTheirShape) {
  ASSERT_FALSE(compiled_kernels().empty());
  for (const KernelHandle& k : compiled_kernels()) {
    EXPECT_NE(k.kernel, nullptr) << k.name;
    EXPECT_EQ(k.rows, 16 * k.warps_m) << k.name;
    EXPECT_EQ(k.threads, 128) << k.name;
    EXPECT_LE(k.smem_bytes, 227 * 1024) << k.name;
    EXPECT_GE(k.stages, 2) << k.name;
    EXPECT_EQ(k.block_n % 16, 0) << k.name;
  }
}

TEST(FastDivider, MatchesIntegerDivision) {
  std::mt19937 rng(7);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 300; ++d) divisors.push_back(d);
  for (std::uint32_t d : {511u, 512u, 513u, 4096u, 65535u, 65536u, 1000003u, 0x7fffffffu}) {
    divisors.push_back(d);
  }
  for (std::uint32_t d : divisors) {
    const FastDivider f = FastDivider::make(d);
    for (std::uint32_t n = 0; n < 3000; ++n) ASSERT_EQ(f.divide(n), n / d) << n << " / " << d;
    for (int i = 0; i < 3000; ++i) {
      const std::uint32_t n = rng() & 0x7fffffffu;
      ASSERT_EQ(f.divide(n), n / d) << n << " / " << d;
    }
    ASSERT_EQ(f.divide(0x7fffffffu), 0x7fffffffu / d);
  }
}

TEST(KvRowOffsets, MatchKvAddressingForBothLayouts) {
  std::mt19937 rng(3);
  // Contiguous: [batch 3, capacity 100, kv_heads 4, d 64], V with other strides.
  const KvAddressing k{100 * 4 * 64, 4 * 64, 64, 0, nullptr, 0};
  const KvAddressing v{100 * 4 * 72, 4 * 72, 72, 0, nullptr, 0};
  for (int i = 0; i < 1000; ++i) {
    const int b = static_cast<int>(rng() % 3), t = static_cast<int>(rng() % 100),
              h = static_cast<int>(rng() % 4);
    const KvRowOffsets o = kv_row_offsets(k, v, FastDivider::make(1), b, t, h);
    ASSERT_EQ(o.k, k.row(b, t, h));
    ASSERT_EQ(o.v, v.row(b, t, h));
  }
  // Paged, page sizes 1, 3, 16, 100: a shuffled block table of 2 requests.
  for (int page : {1, 3, 16, 100}) {
    const int max_pages = (1000 + page - 1) / page;
    std::vector<std::int32_t> table(2 * static_cast<std::size_t>(max_pages));
    for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<std::int32_t>(i);
    std::shuffle(table.begin(), table.end(), rng);
    const KvAddressing pk{page * 2 * 64, 2 * 64, 64, page, table.data(), max_pages};
    const KvAddressing pv{page * 2 * 80, 2 * 80, 80, page, table.data(), max_pages};
    const FastDivider div = FastDivider::make(static_cast<std::uint32_t>(page));
    for (int b = 0; b < 2; ++b) {
      for (int t = 0; t < 1000; ++t) {
        const KvRowOffsets o = kv_row_offsets(pk, pv, div, b, t, t % 2);
        ASSERT_EQ(o.k, pk.row(b, t, t % 2)) << "page " << page << " token " << t;
        ASSERT_EQ(o.v, pv.row(b, t, t % 2));
      }
    }
  }
}

}  // namespace
}  // namespace leanattn::cuda

namespace leanattn::cuda {
namespace {

struct StateList {
  std::vector<SoftmaxStats<float>> st;
  std::vector<Columns4> o;
  SoftmaxStats<float> stats(int k) const { return st[static_cast<std::size_t>(k)]; }
  Columns4 columns(int k) const { return o[static_cast<std::size_t>(k)]; }
};

TEST(SlotMerge, ChunksAndLanesFollowTheShapeOnly) {
  EXPECT_EQ(merge_lanes(16, 128), 8);  // one row of d64: 16 items, 8 threads each
  EXPECT_EQ(merge_lanes(32, 128), 4);
  EXPECT_EQ(merge_lanes(100, 128), 1);  // not a power of two over 128: one lane
  EXPECT_EQ(merge_lanes(512, 128), 1);
  EXPECT_EQ(merge_chunk_rows(264, 16, 4096, 128), 15);  // 4096 / 264 rows at once
  EXPECT_EQ(merge_chunk_rows(2, 16, 4096, 128), 16);
  EXPECT_EQ(merge_chunk_rows(2, 300, 4096, 128), 128);
  EXPECT_EQ(merge_chunk_rows(5000, 16, 4096, 128), 0);  // the serial fallback
}

TEST(SlotMerge, EqualsTheSerialMergeAndIgnoresEmptySlots) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int count : {1, 2, 7, 64, 265}) {
    StateList s;
    for (int k = 0; k < count; ++k) {
      const bool empty = k % 5 == 3;
      s.st.push_back(empty ? empty_stats<float>()
                           : SoftmaxStats<float>{u(rng), 1.0f + u(rng) * u(rng)});
      s.o.push_back(empty ? Columns4{{0, 0, 0, 0}} : Columns4{{u(rng), u(rng), u(rng), u(rng)}});
    }
    const MergedColumns serial = merge_in_order(count, s);
    for (int lanes : {1, 2, 8, 128}) {
      const MergedColumns par = merge_slots(count, lanes, s);
      EXPECT_EQ(par.stats.m, serial.stats.m);
      EXPECT_NEAR(par.stats.l, serial.stats.l, 1e-4f * std::abs(serial.stats.l));
      for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(par.o.v[i], serial.o.v[i], 1e-4f * (1.0f + std::abs(serial.o.v[i])));
      }
    }
  }
  StateList none;  // every slot empty: the empty state (output 0, LSE -inf), no NaN
  for (int k = 0; k < 3; ++k) {
    none.st.push_back(empty_stats<float>());
    none.o.push_back({{0, 0, 0, 0}});
  }
  const MergedColumns e = merge_slots(3, 2, none);
  EXPECT_EQ(e.stats.l, 0.0f);
  EXPECT_EQ(finalize(e.stats).inv_l, 0.0f);
  EXPECT_EQ(e.o.v[0], 0.0f);
}

}  // namespace
}  // namespace leanattn::cuda
