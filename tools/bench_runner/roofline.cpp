// compute_ceiling(): the arithmetic bound of a decode shape on this CPU (see roofline.hpp).
#include "bench_runner/roofline.hpp"

#include <string>

#include "cpu/segment_kernel.hpp"

namespace leanattn::bench {

namespace {

// Vector ops that widen one vector of K or V elements to f32.
double widen_ops(DType t, bool f16_instruction) {
  switch (t) {
    case DType::f32:
      return 0.0;
    case DType::f16:
      return f16_instruction ? 1.0 : kEmulatedF16Ops;
    case DType::bf16:
      return 1.0;
    // The 8-bit loaders of src/cpu/kv_row_load-inl.hpp, per vector: int8 a sign-extension and a
    // conversion; e5m2 a zero-extension and a shift, then f16's; e4m3 a sign-extension, a shift,
    // two masks, an OR, a compare and a blend (its NaN pattern), then f16's.
    case DType::int8:
      return 2.0;
    case DType::fp8_e5m2:
      return 2.0 + widen_ops(DType::f16, f16_instruction);
    case DType::fp8_e4m3:
      return 7.0 + widen_ops(DType::f16, f16_instruction);
    // ggml's blocks (load_block): the block's f16 scale broadcast and widened (f16's ops), the
    // codes widened (q8_0: a sign-extension and a conversion; q4_0: a zero-extension, a shift, a
    // mask, a conversion and the subtraction of 8), a multiply by the scale.
    case DType::q8_0:
      return 4.0 + widen_ops(DType::f16, f16_instruction);
    case DType::q4_0:
      return 7.0 + widen_ops(DType::f16, f16_instruction);
  }
  return 1.0;
}

}  // namespace

ComputeCeiling compute_ceiling(const DecodeProblem& p, SimdShape simd, double clock_ghz,
                               bool shared_kv) {
  const double lanes = simd.f32_lanes;
  const double d = p.head_dim, dv = p.value_dim();
  ComputeCeiling c;
  const DType k = p.kv_dtype, v = p.value_dtype();  // K's and V's types (one, or a pair)
  // bf16 dot products: one instruction per 2 x lanes values of q . k, K not widened.
  const bool dot =
      simd.bf16_dot && p.q_dtype == DType::bf16 && k == DType::bf16 && p.head_dim % 32 == 0;
  c.fma = p.pair_rows() * ((dot ? d / 2 : d) + dv) / lanes;
  c.widen = ((dot ? 0.0 : d * widen_ops(k, simd.f16_instruction)) +
             dv * widen_ops(v, simd.f16_instruction)) /
            lanes;
  c.cycles_per_token_head = (c.fma + c.widen) / kVectorOpsPerCycle;
  const double k_bytes = static_cast<double>(row_units(k, p.head_dim) * dtype_size(k));
  const double v_bytes = static_cast<double>(row_units(v, p.value_dim()) * dtype_size(v));
  c.bytes_per_token_head = shared_kv ? k_bytes : k_bytes + v_bytes;
  c.gbps_per_core = c.bytes_per_token_head / c.cycles_per_token_head * clock_ghz;
  return c;
}

SimdShape simd_shape(const std::string& target) {
  const cpu::SimdKernel k = cpu::find_simd_kernel(target);
  return {k.f32_lanes, k.f16_instruction, k.bf16_dot};
}

}  // namespace leanattn::bench
