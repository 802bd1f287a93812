// The consumer half of the decode kernel: one warp's online-softmax attention over 16-token steps
// of the shared-memory K and V tiles, on tensor cores (mma.sync m16n8k16, fp32 accumulators).
// The warp owns a 16-row tile of the GQA group's query rows and keeps, in registers, the
// unnormalised output O [16][head_dim], the running max m and its lanes' share of the running
// sum l of each row. Per step:
//   S = Q K^T (scaled in fp32, keys outside the segment masked to -inf)
//   m_new, shift, rescale from the state header's rules (common/ordered_merge.hpp: row_step)
//   P = exp(S - shift), rounded to the 16-bit type in place as the A operand of P V
//   O = O * rescale + P V,  l = l * rescale + sum(P)
// Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/common/mma_layout.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct WarpAttention {
  static constexpr int kDimTiles = Shape::kDimTiles;
  static constexpr int kDimSteps = Shape::kDimSteps;
  static constexpr int kQRegSteps = Shape::kQInRegisters ? kDimSteps : 1;

  float o[kDimTiles][4];  // accumulator fragments: column tile dt, elements c0..c3
  float m[2];             // rows acc_row(lane, 0) and acc_row(lane, 2)
  float l[2];             // this lane's columns only until finish()
  std::uint32_t q[kQRegSteps][4];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) o[dt][c] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const SoftmaxStats<float> e = empty_stats<float>();
      m[i] = e.m;
      l[i] = e.l;
    }
  }

  // Address of element (row, col) of a swizzled [rows][head_dim] tile.
  __device__ __forceinline__ static std::uint32_t at(std::uint32_t tile, int row, int col) {
    return tile + 2u * static_cast<std::uint32_t>(swizzled_offset(row, col, Shape::kChunksPerRow));
  }

  // Query fragments of this warp's rows for every k-step (head_dim <= 128 only).
  __device__ __forceinline__ void load_q(std::uint32_t q_tile, int warp_m, int lane) {
    if constexpr (Shape::kQInRegisters) {
      const RowCol rc = q_ldmatrix_row(lane);
#pragma unroll
      for (int kk = 0; kk < kDimSteps; ++kk) {
        ptx::ldmatrix_x4(q[kk], at(q_tile, warp_m * 16 + rc.row, kk * 16 + rc.col));
      }
    }
  }

  // One step over tile rows [tile_row, tile_row + 16), of which the first `valid` (1..16) are
  // keys of the segment (step_valid_keys); the others are masked.
  __device__ __forceinline__ void step(std::uint32_t q_tile, std::uint32_t k_tile,
                                       std::uint32_t v_tile, int tile_row, int valid, float scale,
                                       int warp_m, int lane) {
    // S = Q K^T: two n8 tiles of 8 tokens.
    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    const RowCol qrc = q_ldmatrix_row(lane);
    const RowCol krc = k_ldmatrix_row(lane);
    // With Q in registers the loop must unroll fully (q[kk] stays a register); from shared memory
    // a partial unroll keeps fewer fragments in flight (head_dim 256 is at the register limit).
#pragma unroll(Shape::kQInRegisters ? kDimSteps : 4)
    for (int kk = 0; kk < kDimSteps; ++kk) {
      std::uint32_t a[4];
      if constexpr (Shape::kQInRegisters) {
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = q[kk][i];
      } else {
        ptx::ldmatrix_x4(a, at(q_tile, warp_m * 16 + qrc.row, kk * 16 + qrc.col));
      }
      std::uint32_t b[4];
      ptx::ldmatrix_x4(b, at(k_tile, tile_row + krc.row, kk * 16 + krc.col));
      ptx::mma_16816<T>(s[0], a, b[0], b[1]);
      ptx::mma_16816<T>(s[1], a, b[2], b[3]);
    }

    // Scale, and mask keys outside the segment.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[nt][c] =
            nt * 8 + acc_col(lane, c) < valid ? s[nt][c] * scale : softmax_detail::neg_inf<float>();
      }
    }

    // Online softmax, row by row (a row lives in the 4 lanes of a quad).
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float block_max = score_max(score_max(s[0][2 * i], s[0][2 * i + 1]),
                                  score_max(s[1][2 * i], s[1][2 * i + 1]));
      block_max = score_max(block_max, __shfl_xor_sync(0xffffffffu, block_max, 1));
      block_max = score_max(block_max, __shfl_xor_sync(0xffffffffu, block_max, 2));
      const RowStep st = row_step(m[i], block_max);
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          s[nt][2 * i + j] = row_weight(s[nt][2 * i + j], st.shift);
          sum += s[nt][2 * i + j];
        }
      }
      m[i] = st.m_new;
      l[i] = l[i] * st.rescale + sum;
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) {
        o[dt][2 * i] *= st.rescale;
        o[dt][2 * i + 1] *= st.rescale;
      }
    }

    // O += P V, with S's accumulators reused as P's A fragment.
    const std::uint32_t a[4] = {ptx::pack2<T>(s[0][0], s[0][1]), ptx::pack2<T>(s[0][2], s[0][3]),
                                ptx::pack2<T>(s[1][0], s[1][1]), ptx::pack2<T>(s[1][2], s[1][3])};
    const RowCol vrc = v_ldmatrix_row(lane);
#pragma unroll
    for (int dj = 0; dj < kDimSteps; ++dj) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4_trans(b, at(v_tile, tile_row + vrc.row, dj * 16 + vrc.col));
      ptx::mma_16816<T>(o[2 * dj], a, b[0], b[1]);
      ptx::mma_16816<T>(o[2 * dj + 1], a, b[2], b[3]);
    }
  }

  // Completes l: the sum over the quad's lanes (fixed order: xor 1, then xor 2).
  __device__ __forceinline__ void finish() {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
      l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
  }
};

}  // namespace leanattn::cuda
