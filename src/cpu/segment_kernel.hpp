// The CPU engine's inner loop, as seen from the (SIMD-free) engine: one call computes the
// softmax state of a group of query rows over a token range of one (request, KV head).
// Implemented once in segment_kernel.cpp (the tiled kernel) and row_kernel-inl.hpp (the row
// kernel of SCALAR and SVE) and compiled for every SIMD target Highway offers (runtime dispatch);
// the registry below lists the compiled targets this CPU supports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/score_rules.hpp"
#include "leanattn/core/kv_addressing.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn::cpu {

struct SegmentJob {
  const float* q = nullptr;  // [rows, head_dim] float, already multiplied by the softmax scale
  // Q's own bf16 bits [rows, head_dim], unscaled, for a kernel of bf16 dot products
  // (SimdKernel::bf16_dot, with bf16 Q and K and head_dim a multiple of 32): the scores are then
  // q_scale x (q_bits . k), and q is not read. Null: q.
  const std::uint16_t* q_bits = nullptr;
  float q_scale = 1.0f;
  std::int32_t rows = 0;        // query rows (q_len x the GQA group: K and V are read once for all)
  std::int32_t head_dim = 0;    // Q's and K's width
  std::int32_t head_dim_v = 0;  // V's and o's (<= head_dim; V may be the start of K's rows)
  const void* k_cache = nullptr;  // element type kv_dtype, addressed by `k`
  const void* v_cache = nullptr;  // element type v_dtype, addressed by `v`
  DType kv_dtype = DType::f16;    // K's
  DType v_dtype = DType::f16;     // V's, always set: kv_dtype, or with it two of f16, q8_0, q4_0
  KvAddressing k{};
  KvAddressing v{};
  // An 8-bit kv_dtype: float scales (value = stored x scale), addressed like the cache by
  // k_scale_at / v_scale_at (strides 0 where a per-tensor or per-head scale does not move).
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  KvAddressing k_scale_at{};
  KvAddressing v_scale_at{};
  std::int32_t request = 0;
  std::int32_t kv_head = 0;
  std::int64_t token_begin = 0;  // tokens [token_begin, token_end) of the request
  std::int64_t token_end = 0;
  // State, updated in place: o [rows, head_dim_v] unnormalised, m and l [rows]. On entry it may be
  // the empty state (o = 0, m = -inf, l = 0) or any earlier state of the same rows.
  float* o = nullptr;
  float* m = nullptr;
  float* l = nullptr;
  // Variants (masks, soft-cap, ALiBi) for these rows; null for plain attention.
  const ScoreRules* rules = nullptr;
  // Memory the engine reads next: with the block's token t the kernel prefetches prefetch_lines
  // cache lines from prefetch_k[t] (while it computes scores) and from prefetch_v[t] (while it
  // accumulates values), so DRAM streams while the FMAs run. The engine points them at the next
  // block's rows, in address order where it can (docs/cpu-engine.md, "Prefetch"). The engine's
  // calls are one block each; in a longer range only the last block prefetches.
  // prefetch_lines = 0: none.
  const char* const* prefetch_k = nullptr;  // [kKernelRowsPadded]
  const char* const* prefetch_v = nullptr;  // [kKernelRowsPadded]
  std::int32_t prefetch_lines = 0;
  // Set: the pass runs the many-rows path (gemm_rows-inl.hpp: up to gemm_blocks blocks of K and V
  // at a time widened once into this scratch, 64-byte aligned, gemm_blocks x
  // gemm_scratch_floats(head_dim, head_dim_v) floats; q is read, not q_bits, and nothing is
  // prefetched). The engine sets it for passes of many rows; the row kernel's targets (SCALAR,
  // SVE) ignore it. Null: the tiled kernel.
  float* gemm_scratch = nullptr;
  std::int32_t gemm_blocks = 1;  // 1 .. kMaxGemmBlocks
};

using SegmentKernelFn = void (*)(const SegmentJob&);

// Tokens the kernel processes per block; the engine hands it ranges of at most this many tokens
// when it interleaves several KV heads of one request.
inline constexpr std::int32_t kKernelBlockTokens = 32;
// Length of the kernel's per-block row arrays: a block padded to the score loop's step, which
// may read up to 16 rows past the block (repeats of its last row).
inline constexpr std::int32_t kKernelRowsPadded = kKernelBlockTokens + 16;

// Floats of one block in SegmentJob::gemm_scratch: K (transposed) and V, widened to fp32.
constexpr std::int64_t gemm_scratch_floats(std::int32_t head_dim, std::int32_t head_dim_v) {
  return static_cast<std::int64_t>(head_dim + head_dim_v) * kKernelBlockTokens;
}

// The many-rows path widens up to this many blocks at a time and runs every block of rows over
// all of them, so that a row block's q and o stay in L1 while the widened K and V (at most
// kGemmTileBytes, within the L2 of every CPU measured) are read from L2: with one block per sweep
// of the rows, a 2048-row pass of d 128 streams 2 MiB of q and o per 32 keys.
inline constexpr std::int32_t kMaxGemmBlocks = 16;
inline constexpr std::int64_t kGemmTileBytes = 256 * 1024;
// Blocks per sweep for heads of head_dim and head_dim_v values: d 64 -> 16 (512 keys), d 128 -> 8,
// DeepSeek's 576/512 -> 1.
constexpr std::int32_t gemm_sweep_blocks(std::int32_t head_dim, std::int32_t head_dim_v) {
  const std::int64_t block_bytes =
      gemm_scratch_floats(head_dim, head_dim_v) * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t fit = kGemmTileBytes / block_bytes;
  return static_cast<std::int32_t>(fit < 1 ? 1 : fit > kMaxGemmBlocks ? kMaxGemmBlocks : fit);
}
static_assert(gemm_sweep_blocks(64, 64) == 16 && gemm_sweep_blocks(128, 128) == 8 &&
              gemm_sweep_blocks(576, 512) == 1);

struct SimdKernel {
  std::string name;         // Highway's target name: "AVX3", "AVX2", "SSE4", "EMU128", ...
  std::int64_t target = 0;  // Highway target bit (lower is better)
  SegmentKernelFn compute = nullptr;
  // Floats per vector of the kernel's loops (the compute ceiling of `leanattn bench`): known at
  // run time on scalable targets, so registration gives a function, called only where the target
  // runs; supported_simd_kernels() fills f32_lanes from it.
  std::int32_t (*count_f32_lanes)() = nullptr;
  std::int32_t f32_lanes = 1;
  bool f16_instruction = false;  // f16 -> f32 by one instruction (else integer emulation)
  // The row kernel (row_kernel-inl.hpp: SCALAR, and SVE / SVE2, whose sizeless vectors the tiled
  // kernel cannot keep in arrays), not the tiled one: ranked after every tiled target.
  bool row_kernel = false;
  // bf16 Q . K by bf16 dot products (score_block_bf16_dot-inl.hpp), where the CPU has them
  // (AVX512-BF16): "AVX3_BF16", the AVX3 kernel with that score loop, ranked before AVX3. The
  // engine then gives the kernel Q's own bits (SegmentJob::q_bits) for bf16 Q and K.
  bool bf16_dot = false;
};

// Whether this CPU runs bf16 dot products (x86: AVX512-BF16).
bool cpu_has_bf16_dot();

// Called once per compiled target during static initialisation (segment_kernel.cpp).
int register_simd_kernel(const SimdKernel& kernel);

// Compiled targets that this CPU supports, best first: the tiled kernels by Highway's order
// (AVX3_BF16 before AVX3), then the row kernels (on Arm: NEON first, then SVE2_128, SVE_256, SVE2,
// SVE; docs/cpu-engine.md, "Arm64", says why).
std::vector<SimdKernel> supported_simd_kernels();

// The kernel for `name` ("" = best supported); throws Error("simd", ...) if it is not compiled or
// this CPU lacks it.
SimdKernel find_simd_kernel(std::string_view name);

}  // namespace leanattn::cpu
