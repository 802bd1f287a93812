// The tiled SIMD kernel's shape, per Highway target (segment_kernel.cpp includes it after
// foreach_target.h): the registers it plans with, query rows per pass, tokens per score step,
// vectors per value chunk, the layout of a block's scores, and the prefetch instruction.
// Derived here once; every loop of the kernel reads them.
#if defined(LEANATTN_CPU_KERNEL_SHAPE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef LEANATTN_CPU_KERNEL_SHAPE_INL_HPP_
#undef LEANATTN_CPU_KERNEL_SHAPE_INL_HPP_
#else
#define LEANATTN_CPU_KERNEL_SHAPE_INL_HPP_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "cpu/segment_kernel.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Floats per vector on the fixed-width targets (x86, NEON, EMU128); on the scalable ones (SVE),
// the most a vector may hold: their kernel (row_kernel-inl.hpp) reads none of the shape below.
constexpr auto kF32Lanes = static_cast<std::int32_t>(hn::MaxLanes(hn::ScalableTag<float>()));

#if HWY_TARGET != HWY_SCALAR

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Vector registers the loops may plan with: 32 with AVX-512 (HWY_AVX3 and every better x86
// target: AVX3_DL, and AVX3_ZEN4 / AVX3_SPR of newer Highway versions, whose bits are lower) and
// with 64-bit Arm's NEON (v0-v31), 16 with AVX2 (and elsewhere); SSE4 counts 12 of its 16, since
// its f16 conversion is a dozen integer operations with temporaries of their own.
constexpr int kRegisters = (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)     ? 32
                           : HWY_TARGET == HWY_NEON && HWY_ARCH_ARM_A64 ? 32
                           : HWY_TARGET == HWY_SSE4                     ? 12
                                                                        : 16;
// Accumulators a loop keeps for R query rows: up to 3/4 of the registers (12 of 16 with AVX2),
// as long as the accumulators, the vectors they multiply (one per token or column of a step)
// and one more still fit, which the compiler otherwise spills. 12 independent FMA chains hide
// the 4-cycle FMA latency at 2 FMAs per cycle with slack, which 8 do not (measured on Zen 3, 4
// rows: about 5 cycles per token and KV head saved in each loop).
constexpr int kAccumulators = 3 * kRegisters / 4;
// Query rows one pass keeps: up to 8 with 32 registers, 4 otherwise (any count up to that, so a
// GQA group of 3, 5, 6 or 7 reads its K and V once, not in passes of 4, 2 and 1); never more than
// a vector's floats: NEON keeps passes of 4 despite its 32 registers. A choice, not a
// measurement: no x86 target has run passes wider than its vector (AVX-512 8 of 16 floats, AVX2
// 4 of 8, SSE4 4 of 4), and no Arm hardware was there to measure 8 rows on 4 lanes.
constexpr int kPassRows = std::min(kRegisters >= 32 ? 8 : 4, kF32Lanes);
// Entries of S per token for R rows: R rounded up to a power of two, so that every vector of S
// holds whole tokens (the per-row reductions fold lane i onto lane i % stride). The padding rows
// score 0 and get P = 0 (softmax_block).
template <int R>
constexpr int score_stride() {
  return R <= 1 ? 1 : R <= 2 ? 2 : R <= 4 ? 4 : 8;
}
// Tokens per score step: R x U accumulators (for a power-of-two R a multiple of 4, for the
// reduction tree), U K vectors and a q vector in registers, and U row pointers in general
// registers (16, a few taken by the loop): with R = 1 at most 8, since each K vector feeds one
// FMA and 16 tokens spilled 8 row pointers and a vector in the AVX-512 loop (reloaded for every
// column vector). AVX2: U = 8, 4, 3, 3 for R = 1, 2, 3, 4; AVX-512: 8, 10, 7, 6, 4, 4, 3, 3 for
// R = 1 .. 8; SSE4: 4, 2, 2, 2.
template <int R>
constexpr int score_tokens() {
  if (R == 1) return std::min(8, kRegisters / 8 * 4);
  for (int u = kAccumulators / R; u > 1; --u) {
    const bool whole_groups = score_stride<R>() != R || R * u % 4 == 0;
    if (whole_groups && R * u + u + 1 <= kRegisters) return u;
  }
  return 1;
}
// Vectors of o per row in a value chunk: R x C accumulators, C V vectors, a broadcast; at most
// 8. AVX2: C = 7, 5, 3, 3 (R = 1..4); AVX-512: 8, 8, 7, 6, 4, 4, 3, 3 (R = 1..8); SSE4: 5, 3, 2, 2.
template <int R>
constexpr int value_vectors() {
  return std::min({8, kAccumulators / R, (kRegisters - 1) / (R + 1)});
}
// Rows past a block's tokens that a pass's score loop reads (its last step of U tokens, padded):
// at most the largest U less one.
constexpr int kMaxPaddingRows = [] {
  int most = 0;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((most = std::max(most, score_tokens<R + 1>() - 1)), ...);
  }
  (std::make_integer_sequence<int, kPassRows>());
  return most;
}();
constexpr int kBlock = kKernelBlockTokens;  // tokens per block
constexpr int kRowsPadded = kKernelRowsPadded;
constexpr int kMaxRows = 16;  // bound for buffers sized by rows per pass
// Row arrays and S hold a block padded to U tokens.
static_assert((kBlock + score_tokens<1>() - 1) / score_tokens<1>() * score_tokens<1>() <=
              kRowsPadded);
static_assert(kBlock + kMaxPaddingRows <= kRowsPadded);

// Prefetches `lines` cache lines from p + 64 x first on, into L2 (hint T1): a whole next block
// of a GQA group is larger than L1 (128 KiB for 32/8 heads at d 128), and on the Xeon T1 read
// 8-12% faster from DRAM than T0 (paired, docs/cpu-engine.md); on Zen 3, T0, T1 and NTA measured
// alike. Prefetches never fault, so the engine may repeat or overshoot addresses.
HWY_INLINE void prefetch_lines(const char* p, std::int32_t first, std::int32_t lines) {
  p += first * 64;
  for (std::int32_t i = 0; i < lines; ++i) __builtin_prefetch(p + i * 64, 0, 2);
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LEANATTN_CPU_KERNEL_SHAPE_INL_HPP_
