// The many-rows path's tiles, per Highway target (segment_kernel.cpp includes it after
// foreach_target.h): one kernel block of K widened to fp32 and transposed ([d][kKernelBlockTokens]:
// a token per lane, so the scores are broadcast FMAs over token lanes), and of V widened to fp32
// ([token][dv]), into the worker's scratch (SegmentJob::gemm_scratch). Done once per block and KV
// head, whatever the number of query rows; the loaders are the tiled kernel's
// (kv_row_load-inl.hpp), so every cache type widens exactly as there. gemm_rows-inl.hpp reads them.
#if defined(LEANATTN_CPU_GEMM_TILE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_GEMM_TILE_INL_HPP_
#undef LEANATTN_CPU_GEMM_TILE_INL_HPP_
#else
#define LEANATTN_CPU_GEMM_TILE_INL_HPP_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "cpu/kernel_shape-inl.hpp"
#include "cpu/kv_elements.hpp"
#include "cpu/kv_row_load-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// Tokens per score step of the many-rows path: two vectors of token lanes, so that a block
// (kBlock tokens) is a whole number of steps on every fixed-width target (16, 8 or 4 lanes).
constexpr int kGemmTokenVectors = 2;
constexpr int kGemmTokenStep = kGemmTokenVectors * kF32Lanes;
static_assert(kBlock % kGemmTokenStep == 0);

// A block's widened tiles: K transposed, kt[i * kBlock + t] = value i of token t (columns
// t < columns: the block's tokens rounded up to a score step, those past `tokens` zero), V
// row-major, vw[t * dv + i] for t < tokens. Scales (8-bit caches) are not in them: they multiply
// the scores and weights, as in the tiled kernel.
struct GemmTile {
  const float* kt = nullptr;
  const float* vw = nullptr;
  std::int32_t tokens = 0;
  std::int32_t columns = 0;
};

// Widens the rows of k (t < tokens, d values each) into kt, transposed; zeroes the columns
// [tokens, columns). Each vector of a row is widened in registers and its lanes stored down a
// column (the transpose costs d scalar stores per token: a few percent of the FMAs at 32 rows).
template <class KT>
HWY_INLINE void widen_k_transposed(const KvRows<KT>& k, std::int32_t tokens, std::int32_t columns,
                                   std::int32_t d, float* HWY_RESTRICT kt) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  HWY_ALIGN float lanes[kF32Lanes];
  for (std::int32_t t = 0; t < tokens; ++t) {
    for (std::int32_t i = 0; i < d; i += n) {
      hn::Store(load_kv(df, k.rows[t], column_scales(k, t, i), 0, i), df, lanes);
      float* column = kt + static_cast<std::ptrdiff_t>(i) * kBlock + t;
      for (std::int32_t j = 0; j < n; ++j) column[j * kBlock] = lanes[j];
    }
  }
  if (columns > tokens) {
    for (std::int32_t i = 0; i < d; ++i) {
      for (std::int32_t t = tokens; t < columns; ++t) kt[i * kBlock + t] = 0.0f;
    }
  }
}

// Widens the rows of v (t < tokens, dv values each) into vw, row-major.
template <class VT>
HWY_INLINE void widen_v(const KvRows<VT>& v, std::int32_t tokens, std::int32_t dv,
                        float* HWY_RESTRICT vw) {
  const DF df;
  const std::int32_t n = static_cast<std::int32_t>(hn::Lanes(df));
  for (std::int32_t t = 0; t < tokens; ++t) {
    float* row = vw + static_cast<std::ptrdiff_t>(t) * dv;
    for (std::int32_t i = 0; i < dv; i += n) {
      hn::Store(load_kv(df, v.rows[t], column_scales(v, t, i), 0, i), df, row + i);
    }
  }
}

// The tiles of one block in `scratch` (SegmentJob::gemm_scratch, 64-byte aligned, at least
// gemm_scratch_floats(d, dv) floats).
template <class KT, class VT>
HWY_INLINE GemmTile widen_tiles(const KvRows<KT>& k, const KvRows<VT>& v, std::int32_t tokens,
                                std::int32_t d, std::int32_t dv, float* scratch) {
  GemmTile tile;
  tile.tokens = tokens;
  tile.columns = (tokens + kGemmTokenStep - 1) / kGemmTokenStep * kGemmTokenStep;
  float* kt = scratch;
  float* vw = scratch + static_cast<std::ptrdiff_t>(d) * kBlock;
  widen_k_transposed(k, tokens, tile.columns, d, kt);
  widen_v(v, tokens, dv, vw);
  tile.kt = kt;
  tile.vw = vw;
  return tile;
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_GEMM_TILE_INL_HPP_
