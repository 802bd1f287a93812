// Query loading and output writing for the CPU engine (see tensor_io.hpp).
#include "cpu/tensor_io.hpp"

#include <hwy/targets.h>

#include <cstring>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "leanattn/core/variant_rules.hpp"
#include "problem/mutation.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace leanattn::cpu {

namespace {

// Rows of f16 <-> float, 8 at a time with F16C where an x86 CPU has it, 4 at a time with NEON on
// every 64-bit Arm CPU (the conversions are exact and round to nearest even, as float16.hpp's):
// scalar conversions of a model's q and output rows cost microseconds per call. head_dim is a
// multiple of 16.
#if defined(__x86_64__)
// Highway's AVX2 target requires F16C and AVX (clang 14's __builtin_cpu_supports has no "f16c").
const bool kHaveF16Rows = (hwy::SupportedTargets() & HWY_AVX2) != 0;

__attribute__((target("avx,f16c"))) void f16_row_to_float(const std::uint16_t* src, float scale,
                                                          float* dst, std::int32_t d) {
  const __m256 s = _mm256_set1_ps(scale);
  for (std::int32_t i = 0; i < d; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtph_ps(h), s));
  }
}

__attribute__((target("avx,f16c"))) void float_row_to_f16(const float* src, float scale,
                                                          std::uint16_t* dst, std::int32_t d) {
  const __m256 s = _mm256_set1_ps(scale);
  for (std::int32_t i = 0; i < d; i += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(src + i), s);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}
#elif defined(__aarch64__)
// FCVTL / FCVTN, rounding to nearest even in the FPCR's default mode.
const bool kHaveF16Rows = true;

void f16_row_to_float(const std::uint16_t* src, float scale, float* dst, std::int32_t d) {
  const float32x4_t s = vdupq_n_f32(scale);
  for (std::int32_t i = 0; i < d; i += 4) {
    vst1q_f32(dst + i, vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))), s));
  }
}

void float_row_to_f16(const float* src, float scale, std::uint16_t* dst, std::int32_t d) {
  const float32x4_t s = vdupq_n_f32(scale);
  for (std::int32_t i = 0; i < d; i += 4) {
    vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vmulq_f32(vld1q_f32(src + i), s))));
  }
}
#else
const bool kHaveF16Rows = false;
void f16_row_to_float(const std::uint16_t*, float, float*, std::int32_t) {}
void float_row_to_f16(const float*, float, std::uint16_t*, std::int32_t) {}
#endif

// Element offset in q of (request, kv_head)'s row r: query r / group (where query_index puts
// it), query head kv_head x group + r % group.
std::int64_t q_row(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, std::int32_t r) {
  const std::int32_t g = p.group_size();
  const std::int32_t qh =
      mutated(Mutation::gqa_head_mapping) ? kv_head + (r % g) * p.kv_heads : kv_head * g + r % g;
  const QueryIndex at = query_index(p, request, r / g);
  return at.batch * t.q_stride_batch + at.token * t.q_stride_token + qh * t.q_stride_head;
}

}  // namespace

void load_scaled_q(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, float* q_out) {
  const std::int32_t d = p.head_dim;
  const float scale = p.softmax_scale();
  for (std::int32_t r = 0; r < p.pair_rows(request); ++r) {
    const std::int64_t base = q_row(p, t, request, kv_head, r);
    float* dst = q_out + static_cast<std::ptrdiff_t>(r) * d;
    if (p.q_dtype == DType::f32) {
      const float* src = static_cast<const float*>(t.q) + base;
      for (std::int32_t i = 0; i < d; ++i) dst[i] = src[i] * scale;
    } else {
      const std::uint16_t* src = static_cast<const std::uint16_t*>(t.q) + base;
      if (p.q_dtype == DType::f16 && kHaveF16Rows && d % 8 == 0) {
        f16_row_to_float(src, scale, dst, d);
      } else if (p.q_dtype == DType::f16) {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = f16_bits_to_float(src[i]) * scale;
      } else {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = bf16_bits_to_float(src[i]) * scale;
      }
    }
  }
}

void load_q_bits(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                 std::int32_t kv_head, std::uint16_t* q_out) {
  const std::int32_t d = p.head_dim;
  const auto* q = static_cast<const std::uint16_t*>(t.q);
  for (std::int32_t r = 0; r < p.pair_rows(request); ++r) {
    std::memcpy(q_out + static_cast<std::ptrdiff_t>(r) * d, q + q_row(p, t, request, kv_head, r),
                static_cast<std::size_t>(d) * sizeof(std::uint16_t));
  }
}

void write_output(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                  std::int32_t kv_head, const float* o, const float* m, const float* l) {
  const std::int32_t g = p.group_size(), d = p.value_dim();
  for (std::int32_t r = 0; r < p.pair_rows(request); ++r) {
    const std::int32_t query = r / g;
    const std::int32_t qh = kv_head * g + r % g;
    const QueryIndex at = query_index(p, request, query);
    const SoftmaxStats<float> stats{m[r], l[r]};
    const Finalized<float> f =
        t.sinks != nullptr ? finalize_with_sink(stats, t.sinks[qh]) : finalize(stats);
    const float* src = o + static_cast<std::ptrdiff_t>(r) * d;
    const std::int64_t base =
        at.batch * t.out_stride_batch + at.token * t.out_stride_token + qh * t.out_stride_head;
    if (p.q_dtype == DType::f32) {
      float* dst = static_cast<float*>(t.out) + base;
      for (std::int32_t i = 0; i < d; ++i) dst[i] = src[i] * f.inv_l;
    } else {
      std::uint16_t* dst = static_cast<std::uint16_t*>(t.out) + base;
      if (p.q_dtype == DType::f16 && kHaveF16Rows && d % 8 == 0) {
        float_row_to_f16(src, f.inv_l, dst, d);
      } else if (p.q_dtype == DType::f16) {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = float_to_f16_bits(src[i] * f.inv_l);
      } else {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = float_to_bf16_bits(src[i] * f.inv_l);
      }
    }
    if (mutated(Mutation::long_row_zeros) && qh == 0 &&
        p.seq_lens[static_cast<std::size_t>(request)] >= 4096) {
      const std::size_t size = dtype_size(p.q_dtype);
      std::memset(static_cast<char*>(t.out) + base * static_cast<std::int64_t>(size), 0,
                  static_cast<std::size_t>(d) * size);
    }
    if (t.lse != nullptr) {
      t.lse[at.batch * t.lse_stride_batch + at.token * t.lse_stride_token + qh] = f.lse;
    }
  }
}

}  // namespace leanattn::cpu
