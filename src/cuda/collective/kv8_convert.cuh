// The 8-bit caches' conversion step of the decode kernel: once a pipeline stage of 8-bit K and V
// (row-major bytes, as collective/tile_loader.cuh copied them) has landed, the CTA's threads turn
// it into one 16-bit K tile and one 16-bit V tile, swizzled like a 16-bit stage, that the warps
// read with ldmatrix (collective/warp_attention.cuh). K is converted as stored (exact: every fp8
// and int8 value is an f16 and a bf16); its scale multiplies the scores in fp32 (the step reads the
// stage's K scales). V is stored x its scale, rounded once to the 16-bit type (the values the
// unquantized cache held; P V then runs as for a 16-bit cache). Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/kv8_format.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct Kv8Converter {
  // The four 8-bit values of `word` (lowest byte first) x scale as two pairs of T (lo: 0, 1).
  template <Kv8Format Format>
  __device__ __forceinline__ static void convert4(std::uint32_t word, float scale,
                                                  std::uint32_t& lo, std::uint32_t& hi) {
    float f[4];
    if constexpr (Format == Kv8Format::int8) {
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        f[b] = static_cast<float>(static_cast<std::int8_t>((word >> (8 * b)) & 0xffu));
      }
    } else {
      const float2 a = ptx::fp8x2_to_float2<Format>(static_cast<std::uint16_t>(word & 0xffffu));
      const float2 b = ptx::fp8x2_to_float2<Format>(static_cast<std::uint16_t>(word >> 16));
      f[0] = a.x;
      f[1] = a.y;
      f[2] = b.x;
      f[3] = b.y;
    }
    lo = ptx::pack2<T>(f[0] * scale, f[1] * scale);
    hi = ptx::pack2<T>(f[2] * scale, f[3] * scale);
  }

  // 16 bytes at `src` x scale -> 16 elements of T: the first 8 at dst0, the others at dst1.
  template <Kv8Format Format>
  __device__ __forceinline__ static void convert16(const std::uint8_t* src, float scale, T* dst0,
                                                   T* dst1) {
    const uint4 w = *reinterpret_cast<const uint4*>(src);
    uint4 a, b;
    convert4<Format>(w.x, scale, a.x, a.y);
    convert4<Format>(w.y, scale, a.z, a.w);
    convert4<Format>(w.z, scale, b.x, b.y);
    convert4<Format>(w.w, scale, b.z, b.w);
    *reinterpret_cast<uint4*>(dst0) = a;
    *reinterpret_cast<uint4*>(dst1) = b;
  }

  template <Kv8Format Format>
  __device__ static void convert_stage(T* k_tile, T* v_tile, const std::uint8_t* k8,
                                       const std::uint8_t* v8, const float* scales, int thread) {
#pragma unroll(Shape::kHeadDim <= 128 ? 4 : 1)
    for (int i = 0; i < Shape::kStageLoadsPerThread; ++i) {
      const ChunkCoord c = load_coord(thread, i, Shape::kThreads, Shape::kLoadChunksPerRow);
      const int src = c.row * Shape::kHeadDim + c.chunk * Shape::kLoadChunkElems;
      const int col = c.chunk * Shape::kLoadChunkElems;
      const int dst0 = swizzled_offset(c.row, col, Shape::kChunksPerRow);
      const int dst1 = swizzled_offset(c.row, col + 8, Shape::kChunksPerRow);
      convert16<Format>(k8 + src, 1.0f, k_tile + dst0, k_tile + dst1);
      convert16<Format>(v8 + src, scales[Shape::kBlockN + c.row], v_tile + dst0, v_tile + dst1);
    }
  }

  // k_tile, v_tile [kBlockN][head_dim] (swizzled) <- the landed stage k8, v8 [kBlockN][head_dim]
  // with its scales [2][kBlockN] (K's unused here). Rows outside the segment were zero-filled,
  // bytes and scales: they convert to zeros.
  __device__ static void convert(T* k_tile, T* v_tile, const std::uint8_t* k8,
                                 const std::uint8_t* v8, const float* scales, const KernelParams& p,
                                 int thread) {
    switch (static_cast<Kv8Format>(p.kv_format)) {
      case Kv8Format::e4m3:
        convert_stage<Kv8Format::e4m3>(k_tile, v_tile, k8, v8, scales, thread);
        break;
      case Kv8Format::e5m2:
        convert_stage<Kv8Format::e5m2>(k_tile, v_tile, k8, v8, scales, thread);
        break;
      case Kv8Format::int8:
        convert_stage<Kv8Format::int8>(k_tile, v_tile, k8, v8, scales, thread);
        break;
    }
  }
};

}  // namespace leanattn::cuda
