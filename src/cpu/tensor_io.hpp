// Reading query rows and writing output rows in any dtype, with the caller's strides. Used by
// the CPU engine around the SIMD kernel (small, per-pair work: group_size x head_dim elements).
#pragma once

#include <cstdint>

#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cpu {

// q_out [group, head_dim] = softmax_scale * q[request, kv_head * group + r, :] as float.
void load_scaled_q(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                   std::int32_t kv_head, float* q_out);

// out[request, kv_head * group + r, :] = o[r, :] / l[r] in q_dtype, and lse[request, ...] =
// m[r] + log(l[r]) when lse is requested; empty rows give 0 and -inf (softmax_state.hpp rules).
void write_output(const DecodeProblem& p, const DecodeTensors& t, std::int32_t request,
                  std::int32_t kv_head, const float* o, const float* m, const float* l);

}  // namespace leanattn::cpu
