// Query loading and output writing for the CPU engine (see tensor_io.hpp).
#include "cpu/tensor_io.hpp"

#include <cstring>

#include "core/mutation.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::cpu {

void load_scaled_q(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, float* q_out) {
  const std::int32_t g = p.group_size(), d = p.head_dim;
  const float scale = p.softmax_scale();
  for (std::int32_t r = 0; r < g; ++r) {
    const std::int32_t qh =
        mutated(Mutation::gqa_head_mapping) ? kv_head + r * p.kv_heads : kv_head * g + r;
    const std::int64_t base = request * t.q_stride_batch + qh * t.q_stride_head;
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
  for (std::int32_t r = 0; r < g; ++r) {
    const std::int32_t qh = kv_head * g + r;
    const Finalized<float> f = finalize(SoftmaxStats<float>{m[r], l[r]});
    const float* src = o + static_cast<std::ptrdiff_t>(r) * d;
    const std::int64_t base = request * t.out_stride_batch + qh * t.out_stride_head;
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
    if (mutated(Mutation::long_row_zeros) && qh == 0 &&
        p.seq_lens[static_cast<std::size_t>(request)] >= 4096) {
      const std::size_t size = dtype_size(p.q_dtype);
      std::memset(static_cast<char*>(t.out) + base * static_cast<std::int64_t>(size), 0,
                  static_cast<std::size_t>(d) * size);
    }
    if (t.lse != nullptr) t.lse[request * t.lse_stride_batch + qh] = f.lse;
  }
}

}  // namespace leanattn::cpu
