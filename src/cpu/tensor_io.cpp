// Query loading and output writing for the CPU engine (see tensor_io.hpp).
#include "cpu/tensor_io.hpp"

#include <cstring>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "leanattn/core/variant_rules.hpp"

namespace leanattn::cpu {

void load_scaled_q(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, float* q_out) {
  const std::int32_t g = p.group_size(), d = p.head_dim;
  const float scale = p.softmax_scale();
  for (std::int32_t r = 0; r < p.pair_rows(); ++r) {
    const std::int64_t base = request * t.q_stride_batch + (r / g) * t.q_stride_token +
                              (kv_head * g + r % g) * t.q_stride_head;
    float* dst = q_out + static_cast<std::ptrdiff_t>(r) * d;
    if (p.q_dtype == DType::f32) {
      const float* src = static_cast<const float*>(t.q) + base;
      for (std::int32_t i = 0; i < d; ++i) dst[i] = src[i] * scale;
    } else {
      const std::uint16_t* src = static_cast<const std::uint16_t*>(t.q) + base;
      if (p.q_dtype == DType::f16) {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = f16_bits_to_float(src[i]) * scale;
      } else {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = bf16_bits_to_float(src[i]) * scale;
      }
    }
  }
}

void write_output(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                  std::int32_t kv_head, const float* o, const float* m, const float* l) {
  const std::int32_t g = p.group_size(), d = p.head_dim;
  for (std::int32_t r = 0; r < p.pair_rows(); ++r) {
    const std::int32_t query = r / g;
    const std::int32_t qh = kv_head * g + r % g;
    const SoftmaxStats<float> stats{m[r], l[r]};
    const Finalized<float> f =
        t.sinks != nullptr ? finalize_with_sink(stats, t.sinks[qh]) : finalize(stats);
    const float* src = o + static_cast<std::ptrdiff_t>(r) * d;
    const std::int64_t base =
        request * t.out_stride_batch + query * t.out_stride_token + qh * t.out_stride_head;
    if (p.q_dtype == DType::f32) {
      float* dst = static_cast<float*>(t.out) + base;
      for (std::int32_t i = 0; i < d; ++i) dst[i] = src[i] * f.inv_l;
    } else {
      std::uint16_t* dst = static_cast<std::uint16_t*>(t.out) + base;
      if (p.q_dtype == DType::f16) {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = float_to_f16_bits(src[i] * f.inv_l);
      } else {
        for (std::int32_t i = 0; i < d; ++i) dst[i] = float_to_bf16_bits(src[i] * f.inv_l);
      }
    }
    if (t.lse != nullptr) {
      t.lse[request * t.lse_stride_batch + query * t.lse_stride_token + qh] = f.lse;
    }
  }
}

}  // namespace leanattn::cpu
