// The CPU engine's inner loop, written once with Google Highway and compiled for every SIMD
// target (foreach_target re-includes this file once per target; see segment_kernel.hpp).
//
// A segment is processed in blocks of kBlock tokens. For each block and each pass of R query
// rows (every row of the GQA group, up to kPassRows: kernel_shape-inl.hpp):
//   1. scores  S[t][r] = q_r . k_t             (qk_block, score_block-inl.hpp: R x U dot
//                                                products at once, reduced by a transpose tree)
//   2. the variants' rules (the soft-cap vectorised, then masks, ALiBi and the caller's bias:
//      score_rules.hpp), softmax m, l update and P = exp(S - m)  (softmax_block-inl.hpp)
//   3. values  o_r = o_r * rescale_r + sum_t P[t][r] v_t   (pv_block, value_block-inl.hpp: R rows
//                                                          x C vectors of o in registers)
// K and V rows are converted to f32 in registers (kv_row_load-inl.hpp); an 8-bit cache's scales
// multiply the scores (K) and the weights (V), a float per token. The layout of S and P is
// [token][row], so one block of K (or V) is read from L1 once per pass of R rows. This file holds
// that tiled kernel's block loop for the fixed-width targets, the dispatch by KV type, and the
// registry of compiled targets; Highway's SCALAR fallback and the scalable-vector targets (SVE,
// SVE2) run the row kernel instead (row_kernel-inl.hpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/segment_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "cpu/gemm_rows-inl.hpp"
#include "cpu/gemm_tile-inl.hpp"
#include "cpu/kernel_shape-inl.hpp"
#include "cpu/kv_row_load-inl.hpp"
#include "cpu/row_kernel-inl.hpp"
#include "cpu/score_block-inl.hpp"
#include "cpu/score_block_bf16_dot-inl.hpp"
#include "cpu/softmax_block-inl.hpp"
#include "cpu/value_block-inl.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu/kv_elements.hpp"
#include "cpu/row_walk.hpp"
#include "cpu/segment_kernel.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "leanattn/problem.hpp"

HWY_BEFORE_NAMESPACE();
namespace leanattn::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The tiled kernel, for the fixed-width SIMD targets (SCALAR and the scalable-vector targets run
// the row kernel: row_kernel-inl.hpp).
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// The same, one copy per R shared by the pairs of different K and V types (inlined into each
// pass, they would add half the kernel's compile time; same-type passes inline it, measured 1-3%
// faster that way on MQA and GQA).
template <int R, class... Args>
HWY_NOINLINE void shared_scores_to_weights(Args... args) {
  scores_to_weights<R>(args...);
}

// One pass of R rows (starting at row r0) over one block of `tokens` K/V rows (keys t0 on), K of
// type KT and V of type VT. `rules`: the job's rules less the soft-cap (null for plain
// attention); `cap`: the soft-cap (0: off).
template <int R, class KT, class VT>
HWY_INLINE void rows_pass(const SegmentJob& job, const ScoreRules* rules, float cap,
                          std::int32_t r0, std::int64_t t0, const KvRows<KT>& krow,
                          const KvRows<VT>& vrow, std::int32_t tokens, const float* kscale,
                          const float* vscale, const char* const* prefetch_k,
                          const char* const* prefetch_v, std::int32_t prefetch_count) {
  constexpr int U = score_tokens<R>();
  const std::int32_t d = job.head_dim, dv = job.head_dim_v;
  const std::int32_t padded_tokens = (tokens + U - 1) / U * U;
  HWY_ALIGN float s[kRowsPadded * kMaxRows + 64];
#if HWY_TARGET == HWY_AVX3
  if constexpr (std::is_same_v<KT, hwy::bfloat16_t>) {
    if (job.q_bits != nullptr) {  // AVX3_BF16 (engine.cpp sets q_bits)
      qk_block_bf16_dot<R>(job.q_bits + r0 * d, krow, padded_tokens, d, job.q_scale, s, prefetch_k,
                           prefetch_count);
    } else {
      qk_block<R>(job.q + r0 * d, krow, padded_tokens, d, s, prefetch_k, prefetch_count);
    }
  } else {
    qk_block<R>(job.q + r0 * d, krow, padded_tokens, d, s, prefetch_k, prefetch_count);
  }
#else
  qk_block<R>(job.q + r0 * d, krow, padded_tokens, d, s, prefetch_k, prefetch_count);
#endif
  float rescale[R];
  if constexpr (std::is_same_v<KT, VT>) {
    scores_to_weights<R>(s, tokens, kScaledKv<KT> ? kscale : nullptr,
                         kScaledKv<VT> ? vscale : nullptr, cap, rules, r0, t0, job.m + r0,
                         job.l + r0, rescale);
  } else {  // neither type has scales
    shared_scores_to_weights<R>(+s, tokens, static_cast<const float*>(nullptr),
                                static_cast<const float*>(nullptr), cap, rules, r0, t0, job.m + r0,
                                job.l + r0, +rescale);
  }
  pv_dispatch<R>(s, vrow, tokens, dv, rescale, job.o + r0 * dv, prefetch_v, prefetch_count);
}

// rows_pass<rows> for 1 <= rows <= R, the pass's row count chosen at run time.
template <int R, class KT, class VT, class... Args>
HWY_INLINE void rows_pass_of(std::int32_t rows, const SegmentJob& job, Args... args) {
  if constexpr (R > 1) {
    if (rows < R) return rows_pass_of<R - 1, KT, VT>(rows, job, args...);
  }
  rows_pass<R, KT, VT>(job, args...);
}

// One block of K and V rows, as both paths read it: the rows' addresses, a block format's scales
// per block of values, an 8-bit cache's per-token scales.
template <class KT, class VT>
struct BlockRows {
  static constexpr std::int32_t kKScales =
      kBlockKv<KT> ? kRowsPadded * kMaxHeadDim / kBlockValues : 1;
  static constexpr std::int32_t kVScales =
      kBlockKv<VT> ? kRowsPadded * kMaxHeadDim / kBlockValues : 1;
  const KT* krow[kRowsPadded];
  const VT* vrow[kRowsPadded];
  // Block formats: the scales of every block of the rows, as floats ([block][row]); bits: their
  // f16 bits.
  HWY_ALIGN float k_blocks[kKScales];
  HWY_ALIGN float v_blocks[kVScales];
  HWY_ALIGN uint16_t bits[std::max(kKScales, kVScales)];
  KvRows<KT> k{krow, k_blocks};
  KvRows<VT> v{vrow, v_blocks};

  BlockRows() = default;
  BlockRows(const BlockRows&) = delete;  // k and v point into it
  BlockRows& operator=(const BlockRows&) = delete;

  // Tokens [t0, t0 + tokens) of the job's (request, KV head); ks / vs: an 8-bit cache's per-token
  // scales (kScaledKv), kBlock each.
  void load(const SegmentJob& job, std::int64_t t0, std::int32_t tokens, float* ks, float* vs) {
    fill_rows(job.k, static_cast<const KT*>(job.k_cache), job.request, t0, job.kv_head, tokens,
              kRowsPadded, krow);
    fill_rows(job.v, static_cast<const VT*>(job.v_cache), job.request, t0, job.kv_head, tokens,
              kBlockKv<VT> ? kRowsPadded : tokens, vrow);
    if constexpr (kBlockKv<KT>) {  // the score loop's padding rows too
      block_row_scales(DF(), krow, std::min(tokens + kMaxPaddingRows, kRowsPadded),
                       job.head_dim / kBlockValues, bits, k_blocks);
    }
    if constexpr (kBlockKv<VT>) {
      block_row_scales(DF(), vrow, tokens, job.head_dim_v / kBlockValues, bits, v_blocks);
    }
    if constexpr (kScaledKv<KT>) {  // then VT is KT
      block_scales<KT>(job.k_scale, job.k_scale_at, job.request, t0, job.kv_head, tokens, ks);
      block_scales<VT>(job.v_scale, job.v_scale_at, job.request, t0, job.kv_head, tokens, vs);
    }
  }
};

// The many-rows path (gemm_rows-inl.hpp): sweeps of up to job.gemm_blocks blocks, each block
// widened once into the job's scratch, then every row block over the sweep.
template <class KT, class VT>
void compute_many_rows(const SegmentJob& job, const KernelRules& split) {
  BlockRows<KT, VT> rows;
  GemmTile tiles[kMaxGemmBlocks];
  HWY_ALIGN float ks[kMaxGemmBlocks * kBlock], vs[kMaxGemmBlocks * kBlock];
  const std::int64_t block_floats = gemm_scratch_floats(job.head_dim, job.head_dim_v);
  const std::int64_t sweep = static_cast<std::int64_t>(job.gemm_blocks) * kBlock;
  for (std::int64_t t0 = job.token_begin; t0 < job.token_end; t0 += sweep) {
    const std::int64_t end = std::min(t0 + sweep, job.token_end);
    std::int32_t n = 0;
    for (std::int64_t t = t0; t < end; t += kBlock, ++n) {
      const auto tokens = static_cast<std::int32_t>(std::min<std::int64_t>(kBlock, end - t));
      rows.load(job, t, tokens, ks + n * kBlock, vs + n * kBlock);
      tiles[n] = widen_tiles(rows.k, rows.v, tokens, job.head_dim, job.head_dim_v,
                             job.gemm_scratch + n * block_floats);
    }
    gemm_sweep(job, tiles, n, split.rules, split.cap, t0, kScaledKv<KT> ? ks : nullptr,
               kScaledKv<VT> ? vs : nullptr);
  }
}

// K of type KT, V of type VT: the same type, or (validate(problem)) two of f16, q8_0 and q4_0.
template <class KT, class VT>
void compute_typed(const SegmentJob& job) {
  static const char* const kNoRows[kRowsPadded] = {};
  const KernelRules split(job.rules);
  if (job.gemm_scratch != nullptr) return compute_many_rows<KT, VT>(job, split);
  BlockRows<KT, VT> rows;
  for (std::int64_t t0 = job.token_begin; t0 < job.token_end; t0 += kBlock) {
    const auto tokens =
        static_cast<std::int32_t>(std::min<std::int64_t>(kBlock, job.token_end - t0));
    HWY_ALIGN float ks[kBlock], vs[kBlock];
    rows.load(job, t0, tokens, ks, vs);
    // The engine hands out one block per call and names what to prefetch with it; a longer range
    // prefetches only with its last block.
    const std::int32_t lines = t0 + kBlock >= job.token_end ? job.prefetch_lines : 0;
    const char* const* pk = lines > 0 ? job.prefetch_k : kNoRows;
    const char* const* pv = lines > 0 ? job.prefetch_v : kNoRows;
    // Passes of up to kPassRows rows, each of as many rows as are left: wider passes read K and
    // V once but spend more on broadcasts and reductions than they save (measured: 8 rows in one
    // AVX2 pass cost 1.8x two passes of 4).
    for (std::int32_t r0 = 0; r0 < job.rows; r0 += kPassRows) {
      rows_pass_of<kPassRows, KT, VT>(std::min(job.rows - r0, kPassRows), job, split.rules,
                                      split.cap, r0, t0, rows.k, rows.v, tokens, ks, vs, pk, pv,
                                      r0 == 0 ? lines : 0);
    }
  }
}

#endif  // HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE

// K of type KT (f16, q8_0 or q4_0) with V of any of these (validate(problem): the pairs
// llama.cpp's -ctk / -ctv make).
template <class KT>
void compute_with_k(const SegmentJob& job) {
  switch (job.v_dtype) {
    case DType::f16:
      return compute_typed<KT, hwy::float16_t>(job);
    case DType::q8_0:
      return compute_typed<KT, Q8_0Byte>(job);
    case DType::q4_0:
      return compute_typed<KT, Q4_0Byte>(job);
    default:  // validate(problem) lets no other pair through; the engine sets v_dtype
      HWY_ABORT("leanattn: K %s with V %s reached the CPU kernel", dtype_name(job.kv_dtype).data(),
                dtype_name(job.v_dtype).data());
  }
}

void compute_segment(const SegmentJob& job) {
  switch (job.kv_dtype) {
    case DType::f32:
      return compute_typed<float, float>(job);
    case DType::f16:
      return compute_with_k<hwy::float16_t>(job);
    case DType::bf16:
      return compute_typed<hwy::bfloat16_t, hwy::bfloat16_t>(job);
    case DType::fp8_e4m3:
      return compute_typed<Fp8E4m3, Fp8E4m3>(job);
    case DType::fp8_e5m2:
      return compute_typed<Fp8E5m2, Fp8E5m2>(job);
    case DType::int8:
      return compute_typed<std::int8_t, std::int8_t>(job);
    case DType::q8_0:
      return compute_with_k<Q8_0Byte>(job);
    case DType::q4_0:
      return compute_with_k<Q4_0Byte>(job);
  }
}

// Floats per vector of this target's loops (the row kernel's on scalable targets).
std::int32_t count_f32_lanes() {
#if HWY_HAVE_SCALABLE
  return static_cast<std::int32_t>(hn::Lanes(DR()));
#else
  return kF32Lanes;
#endif
}

// Registers this target's kernel when the program starts.
[[maybe_unused]] static const int kRegistered =
    register_simd_kernel({.name = hwy::TargetName(HWY_TARGET),
                          .target = HWY_TARGET,
                          .compute = &compute_segment,
                          .count_f32_lanes = &count_f32_lanes,
                          .f16_instruction = kF16Instruction,
                          .row_kernel = HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE});

#if HWY_TARGET == HWY_AVX3
// The same kernel with bf16 dot products in the score loop for bf16 Q and K (supported where
// cpu_has_bf16_dot()).
[[maybe_unused]] static const int kRegisteredBf16Dot =
    register_simd_kernel({.name = "AVX3_BF16",
                          .target = HWY_TARGET,
                          .compute = &compute_segment,
                          .count_f32_lanes = &count_f32_lanes,
                          .f16_instruction = kF16Instruction,
                          .row_kernel = false,
                          .bf16_dot = true});
#endif

}  // namespace leanattn::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
// The registry lives in this file so that linking the engine pulls in every target's kernel.
#include <hwy/targets.h>

#include <string>
#include <tuple>
#include <utility>

#include "leanattn/error.hpp"

namespace leanattn::cpu {

namespace {
std::vector<SimdKernel>& registry() {
  static std::vector<SimdKernel> kernels;
  return kernels;
}
}  // namespace

bool cpu_has_bf16_dot() {
#if HWY_ARCH_X86 && defined(__GNUC__)
  static const bool has = [] {
    __builtin_cpu_init();  // may run during static initialisation (the registry's)
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
#else
  return false;
#endif
}

int register_simd_kernel(const SimdKernel& kernel) {
  registry().push_back(kernel);
  return 0;
}

std::vector<SimdKernel> supported_simd_kernels() {
  std::vector<SimdKernel> out;
  const std::int64_t supported = hwy::SupportedTargets();
  for (const SimdKernel& k : registry()) {
    if ((supported & k.target) == 0 || (k.bf16_dot && !cpu_has_bf16_dot())) continue;
    out.push_back(k);
    out.back().f32_lanes = k.count_f32_lanes();
  }
  std::sort(out.begin(), out.end(), [](const SimdKernel& a, const SimdKernel& b) {
    return std::tuple(a.row_kernel, a.target, !a.bf16_dot) <
           std::tuple(b.row_kernel, b.target, !b.bf16_dot);
  });
  return out;
}

SimdKernel find_simd_kernel(std::string_view name) {
  const std::vector<SimdKernel> kernels = supported_simd_kernels();
  if (kernels.empty()) throw Error("simd", "no SIMD kernel was compiled for this CPU");
  if (name.empty()) return kernels.front();
  std::string names;
  for (const SimdKernel& k : kernels) {
    if (k.name == name) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw Error("simd", "must be one of the targets compiled and supported here (" + names +
                          ") (got '" + std::string(name) + "')");
}

}  // namespace leanattn::cpu
#endif  // HWY_ONCE
