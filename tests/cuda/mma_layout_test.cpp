// The decode kernel's warp-level data movement, checked on the CPU: an emulation of ldmatrix
// (.x4, plain and .trans) and of mma.sync m16n8k16, written from the PTX ISA's fragment tables,
// is driven with the kernel's lane maps (common/mma_layout.hpp) and swizzled tile offsets
// (common/tile_math.hpp), exactly as collective/warp_attention.cuh drives the real instructions.
// The results must equal S = Q K^T and O = P V computed directly, P taken from S's accumulators
// in the kernel's packing order. Values are small integers, so every sum is exact.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "cuda/common/mma_layout.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {
namespace {

using Reg = std::array<float, 2>;  // a 32-bit register holding two 16-bit elements
using Frag = std::array<Reg, 4>;   // four registers of one lane
using WarpFrag = std::array<Frag, 32>;

// A tile of rows x head_dim 16-bit elements in shared memory, stored swizzled as the kernel does.
struct SmemTile {
  int rows, dim;
  std::vector<float> data;
  SmemTile(int r, int d) : rows(r), dim(d), data(static_cast<std::size_t>(r) * d, 0.0f) {}
  void set(int row, int col, float x) {
    data[static_cast<std::size_t>(swizzled_offset(row, col, dim / 8))] = x;
  }
  // The 8 contiguous elements at the element address of (row, col), col a multiple of 8.
  const float* row_at(int row, int col) const {
    return data.data() + swizzled_offset(row, col, dim / 8);
  }
};

// PTX ldmatrix.sync.aligned.m8n8.x4: lane 8j + r gives the address of row r of matrix j. Without
// .trans lane t receives, in register j, elements (t / 4, 2 (t % 4)) and (t / 4, 2 (t % 4) + 1) of
// matrix j; with .trans, elements (2 (t % 4), t / 4) and (2 (t % 4) + 1, t / 4).
WarpFrag ldmatrix_x4(const std::array<const float*, 32>& row_address, bool trans) {
  WarpFrag out{};
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (t % 4) + h : t / 4;
        const int col = trans ? t / 4 : 2 * (t % 4) + h;
        out[static_cast<std::size_t>(t)][static_cast<std::size_t>(j)][static_cast<std::size_t>(h)] =
            row_address[static_cast<std::size_t>(8 * j + row)][col];
      }
    }
  }
  return out;
}

// PTX mma.m16n8k16 fragments (group g = lane / 4, t = lane % 4):
//   A reg i, half h: row g + 8 (i % 2), col 2t + h + 8 (i / 2)
//   B reg i, half h: row (k) 2t + h + 8 i, col (n) g
//   C element c:     row g + 8 (c / 2), col 2t + (c % 2)
// c[lane] += A B over the warp.
void mma(std::array<std::array<float, 4>, 32>& c, const WarpFrag& a,
         const std::array<std::array<Reg, 2>, 32>& b) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      for (int h = 0; h < 2; ++h) {
        A[g + 8 * (i % 2)][2 * t + h + 8 * (i / 2)] =
            a[static_cast<std::size_t>(lane)][static_cast<std::size_t>(i)]
             [static_cast<std::size_t>(h)];
      }
    }
    for (int i = 0; i < 2; ++i) {
      for (int h = 0; h < 2; ++h) {
        B[2 * t + h + 8 * i][g] = b[static_cast<std::size_t>(lane)][static_cast<std::size_t>(i)]
                                   [static_cast<std::size_t>(h)];
      }
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < 4; ++e) {
      const int row = lane / 4 + 8 * (e / 2), col = 2 * (lane % 4) + (e % 2);
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      c[static_cast<std::size_t>(lane)][static_cast<std::size_t>(e)] += sum;
    }
  }
}

TEST(AccumulatorLayout, MatchesThePtxTable) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(acc_row(lane, c), lane / 4 + 8 * (c / 2));
      EXPECT_EQ(acc_col(lane, c), 2 * (lane % 4) + c % 2);
    }
  }
}

class WarpMath : public ::testing::TestWithParam<int> {};  // head_dim

TEST_P(WarpMath, QKAndPVThroughTheKernelsLaneMapsEqualTheDirectProducts) {
  const int d = GetParam();
  const int tile_row = 16;  // the step's first row inside a 32-row K/V stage tile
  const int warp_m = 1;     // the warp's rows inside a 32-row Q tile
  SmemTile q(32, d), k(32, d), v(32, d);
  auto val = [](int a, int b, int c) { return static_cast<float>((a * 7 + b * 3 + c) % 5 - 2); };
  for (int r = 0; r < 32; ++r) {
    for (int c = 0; c < d; ++c) {
      q.set(r, c, val(r, c, 1));
      k.set(r, c, val(r, c, 2));
      v.set(r, c, val(r, c, 3));
    }
  }
  auto elem = [&](const SmemTile& t, int row, int col) {
    return t.data[static_cast<std::size_t>(swizzled_offset(row, col, d / 8))];
  };

  // S = Q K^T for this warp's 16 rows and the step's 16 tokens (warp_attention.cuh: step()).
  std::array<std::array<float, 4>, 32> s0{}, s1{};
  for (int kk = 0; kk < d / 16; ++kk) {
    std::array<const float*, 32> qa{}, ka{};
    for (int lane = 0; lane < 32; ++lane) {
      const RowCol qr = q_ldmatrix_row(lane), kr = k_ldmatrix_row(lane);
      qa[static_cast<std::size_t>(lane)] = q.row_at(warp_m * 16 + qr.row, kk * 16 + qr.col);
      ka[static_cast<std::size_t>(lane)] = k.row_at(tile_row + kr.row, kk * 16 + kr.col);
    }
    const WarpFrag a = ldmatrix_x4(qa, false);
    const WarpFrag b = ldmatrix_x4(ka, false);
    std::array<std::array<Reg, 2>, 32> b_tile0{}, b_tile1{};
    for (std::size_t lane = 0; lane < 32; ++lane) {
      b_tile0[lane] = {b[lane][0], b[lane][1]};
      b_tile1[lane] = {b[lane][2], b[lane][3]};
    }
    mma(s0, a, b_tile0);
    mma(s1, a, b_tile1);
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int c = 0; c < 4; ++c) {
      for (int nt = 0; nt < 2; ++nt) {
        const int row = acc_row(lane, c), tok = nt * 8 + acc_col(lane, c);
        float want = 0.0f;
        for (int i = 0; i < d; ++i)
          want += elem(q, warp_m * 16 + row, i) * elem(k, tile_row + tok, i);
        const float got =
            (nt == 0 ? s0 : s1)[static_cast<std::size_t>(lane)][static_cast<std::size_t>(c)];
        ASSERT_EQ(got, want) << "d " << d << " lane " << lane << " c " << c << " nt " << nt;
      }
    }
  }

  // P = S's accumulators repacked as the A fragment: a[0] = S0{c0,c1}, a[1] = S0{c2,c3},
  // a[2] = S1{c0,c1}, a[3] = S1{c2,c3}; then O = P V over column tiles (ldmatrix.trans of V).
  WarpFrag p{};
  for (std::size_t lane = 0; lane < 32; ++lane) {
    p[lane][0] = {s0[lane][0], s0[lane][1]};
    p[lane][1] = {s0[lane][2], s0[lane][3]};
    p[lane][2] = {s1[lane][0], s1[lane][1]};
    p[lane][3] = {s1[lane][2], s1[lane][3]};
  }
  for (int dj = 0; dj < d / 16; ++dj) {
    std::array<const float*, 32> va{};
    for (int lane = 0; lane < 32; ++lane) {
      const RowCol vr = v_ldmatrix_row(lane);
      va[static_cast<std::size_t>(lane)] = v.row_at(tile_row + vr.row, dj * 16 + vr.col);
    }
    const WarpFrag b = ldmatrix_x4(va, true);
    std::array<std::array<float, 4>, 32> o0{}, o1{};
    std::array<std::array<Reg, 2>, 32> b_tile0{}, b_tile1{};
    for (std::size_t lane = 0; lane < 32; ++lane) {
      b_tile0[lane] = {b[lane][0], b[lane][1]};
      b_tile1[lane] = {b[lane][2], b[lane][3]};
    }
    mma(o0, p, b_tile0);
    mma(o1, p, b_tile1);
    for (int lane = 0; lane < 32; ++lane) {
      for (int c = 0; c < 4; ++c) {
        for (int half = 0; half < 2; ++half) {
          const int row = acc_row(lane, c), col = dj * 16 + half * 8 + acc_col(lane, c);
          float want = 0.0f;
          for (int tok = 0; tok < 16; ++tok) {
            float s = 0.0f;
            for (int i = 0; i < d; ++i) {
              s += elem(q, warp_m * 16 + row, i) * elem(k, tile_row + tok, i);
            }
            want += s * elem(v, tile_row + tok, col);
          }
          const float got =
              (half == 0 ? o0 : o1)[static_cast<std::size_t>(lane)][static_cast<std::size_t>(c)];
          ASSERT_EQ(got, want) << "d " << d << " lane " << lane << " col " << col;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HeadDims, WarpMath, ::testing::Values(64, 128, 256));

}  // namespace
}  // namespace leanattn::cuda
