// Reading query rows and writing output rows in any dtype, with the caller's strides. Used by
// the CPU engine around the SIMD kernel (small, per-pair work: q_len x group x head_dim elements).
// A pair's rows are r = query * group + head in the group (DecodeProblem::pair_rows).
#pragma once

#include <cstdint>

#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cpu {

// q_out [the request's query tokens x group, head_dim]: row r = softmax_scale * q[request, r /
// group, kv_head * group + r % group, :] as float (query_index: where query r / group lives).
void load_scaled_q(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, float* q_out);

// q_out [q_len x group, head_dim]: Q's rows as load_scaled_q, their own 16-bit bits, unscaled (bf16
// Q for the bf16 dot products of SimdKernel::bf16_dot).
void load_q_bits(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                 std::int32_t kv_head, std::uint16_t* q_out);

// o [the request's query tokens x group, head_dim_v]:
// out[request, r / group, kv_head * group + r % group, :] = o[r, :] / l[r] in q_dtype, and lse
// = m[r] + log(l[r]) when lse is requested; empty rows give 0 and -inf (softmax_state.hpp rules).
// With sinks, each row's sink joins here (finalize_with_sink, variant_rules.hpp).
void write_output(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                  std::int32_t kv_head, const float* o, const float* m, const float* l);

}  // namespace leanattn::cpu
