// The consumer half of the decode kernel: one warp's online-softmax attention over 16-token steps
// of the shared-memory K and V tiles, on tensor cores (mma.sync m16n8k16, fp32 accumulators).
// The warp owns a 16-row tile of the pair's rows (q_len tokens x the GQA group) and keeps, in
// registers, the unnormalised output O [16][kVCols] (its share of V's columns: all of them, or
// head_dim_v / WarpsV from column warp_v * kVCols), the running max m and its lanes' share of the
// running sum l of each row. The variants' per-row rules of the pass (the keys each row sees,
// its query position and ALiBi slope: row_rules.hpp) are read from shared memory. Per step:
//   S = Q K^T (scaled in fp32, and by the keys' K scales for an 8-bit cache; keys a row does not
//   see, outside the segment, past its causal end or before its window, masked to -inf; the
//   soft-cap and ALiBi on the others: row_rules.hpp)
//   m_new, shift, rescale from the state header's rules (common/ordered_merge.hpp: row_step)
//   P = exp(S - shift), rounded to the 16-bit type in place as the A operand of P V
//   O = O * rescale + P V,  l = l * rescale + sum(P)
// Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/mma_layout.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "cuda/common/row_rules.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct WarpAttention {
  static constexpr int kDimTiles = Shape::kDimTiles;
  static constexpr int kDimSteps = Shape::kDimSteps;
  static constexpr int kVSteps = Shape::kVSteps;
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

  // Address of element (row, col) of a swizzled [rows][head_dim] tile (Q, K).
  __device__ __forceinline__ static std::uint32_t at(std::uint32_t tile, int row, int col) {
    return tile + 2u * static_cast<std::uint32_t>(swizzled_offset(row, col, Shape::kChunksPerRow));
  }
  // The same in the tile V is read from: [rows][head_dim_v], or K's tile (VFromK).
  __device__ __forceinline__ static std::uint32_t at_v(std::uint32_t tile, int row, int col) {
    return tile +
           2u * static_cast<std::uint32_t>(swizzled_offset(row, col, Shape::kVTileChunksPerRow));
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

  // One step over tile rows [tile_row, tile_row + 16), keys key0 .. key0 + 15; the keys a row
  // does not see (`rules`: the pass's [kRows] row rules in shared memory) are masked. An 8-bit
  // cache: k_scales [kBlockN] are the K scales of the tile's rows (shared memory; else unused).
  // v_col0: the first of the warp's V columns (warp_v * kVCols).
  __device__ __forceinline__ void step(std::uint32_t q_tile, std::uint32_t k_tile,
                                       std::uint32_t v_tile, int tile_row, std::int32_t key0,
                                       const RowRule* rules, const float* k_scales,
                                       const KernelParams& p, int warp_m, int v_col0, int lane) {
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

    // Scale, mask the keys a row does not see, and the soft-cap and ALiBi (warp-uniform branch:
    // plain attention never evaluates them).
    const bool transform = p.softcap > 0.0f || p.alibi_slopes != nullptr;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const RowRule& rule = rules[warp_m * 16 + acc_row(lane, 2 * i)];
      const RowKeys keys = rule.keys;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const std::int32_t key = key0 + nt * 8 + acc_col(lane, 2 * i + j);
          float x = s[nt][2 * i + j] * p.scale;
          if constexpr (Shape::kKv8) x *= k_scales[tile_row + nt * 8 + acc_col(lane, 2 * i + j)];
          if (transform) x = variant_score(x, p.softcap, rule.slope, key, rule.position);
          s[nt][2 * i + j] = keys.sees(key) ? x : softmax_detail::neg_inf<float>();
        }
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
    for (int dj = 0; dj < kVSteps; ++dj) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4_trans(b, at_v(v_tile, tile_row + vrc.row, v_col0 + dj * 16 + vrc.col));
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
