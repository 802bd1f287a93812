// compute_ceiling(): the arithmetic bound of a decode shape on this CPU (see roofline.hpp).
#include "bench_runner/roofline.hpp"

#include <string>

#include "cpu/segment_kernel.hpp"

namespace leanattn::bench {

namespace {

// The ops that widen one vector of K or V elements to f32: f16 and bf16 conversions (an
// emulated f16 one counted as one conversion at its emulation's cost) and integer ops.
struct WidenOps {
  double f16 = 0, bf16 = 0, integer = 0;
};

WidenOps widen_parts(DType t) {
  switch (t) {
    case DType::f32:
      return {};
    case DType::f16:
      return {.f16 = 1};
    case DType::bf16:
      return {.bf16 = 1};
    // The 8-bit loaders of src/cpu/kv_row_load-inl.hpp, per vector: int8 a sign-extension and a
    // conversion; e5m2 a zero-extension and a shift, then f16's; e4m3 a sign-extension, a shift,
    // two masks, an OR, a compare and a blend (its NaN pattern), then f16's.
    case DType::int8:
      return {.integer = 2};
    case DType::fp8_e5m2:
      return {.f16 = 1, .integer = 2};
    case DType::fp8_e4m3:
      return {.f16 = 1, .integer = 7};
    // ggml's blocks (load_block): the block's f16 scale broadcast and widened (f16's ops), the
    // codes widened (q8_0: a sign-extension and a conversion; q4_0: a zero-extension, a shift, a
    // mask, a conversion and the subtraction of 8), a multiply by the scale.
    case DType::q8_0:
      return {.f16 = 1, .integer = 4};
    case DType::q4_0:
      return {.f16 = 1, .integer = 7};
  }
  return {.integer = 1};
}

// Widening ops of one vector: the count (an emulated f16 conversion as kEmulatedF16Ops) and the
// cycles.
double widen_count(DType t, bool f16_instruction) {
  const WidenOps w = widen_parts(t);
  return w.f16 * (f16_instruction ? 1.0 : kEmulatedF16Ops) + w.bf16 + w.integer;
}
double widen_cycles(DType t, const VectorCosts& c) {
  const WidenOps w = widen_parts(t);
  return w.f16 * c.f16_widen + w.bf16 * c.bf16_widen + w.integer * c.int_op;
}

// Query rows that read each token of a KV head: the pair's rows, or in a mixed batch their mean
// weighted by the tokens each request reads (a request of no query token reads none).
double rows_per_token_head(const DecodeProblem& p) {
  if (!p.has_query_start_loc()) return p.pair_rows();
  double rows = 0.0, tokens = 0.0;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    if (p.query_len(b) == 0) continue;
    rows += static_cast<double>(p.seq_lens[static_cast<std::size_t>(b)]) * p.pair_rows(b);
    tokens += p.seq_lens[static_cast<std::size_t>(b)];
  }
  return tokens > 0.0 ? rows / tokens : p.pair_rows();
}

}  // namespace

VectorCosts assumed_vector_costs(SimdShape simd) {
  VectorCosts c;
  if (!simd.f16_instruction) c.f16_widen = kEmulatedF16Ops / kVectorOpsPerCycle;
  return c;
}

ComputeCeiling compute_ceiling(const DecodeProblem& p, SimdShape simd, double clock_ghz,
                               bool shared_kv, const VectorCosts* costs) {
  const VectorCosts cost = costs ? *costs : assumed_vector_costs(simd);
  const double lanes = simd.f32_lanes;
  const double d = p.head_dim, dv = p.value_dim();
  ComputeCeiling c;
  const DType k = p.kv_dtype, v = p.value_dtype();  // K's and V's types (one, or a pair)
  // bf16 dot products: one instruction per 2 x lanes values of q . k, K not widened.
  const bool dot =
      simd.bf16_dot && p.q_dtype == DType::bf16 && k == DType::bf16 && p.head_dim % 32 == 0;
  c.fma = rows_per_token_head(p) * ((dot ? d / 2 : d) + dv) / lanes;
  const double k_widened = dot ? 0.0 : d / lanes, v_widened = dv / lanes;  // vectors
  c.widen = k_widened * widen_count(k, simd.f16_instruction) +
            v_widened * widen_count(v, simd.f16_instruction);
  c.cycles_per_token_head =
      c.fma * cost.fma + k_widened * widen_cycles(k, cost) + v_widened * widen_cycles(v, cost);
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
