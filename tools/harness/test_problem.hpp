// test_problem(): the DecodeProblem the tests build again and again: `lens` tokens per request in
// the contiguous layout with a capacity of the longest request (what make_case would complete,
// so that planner and validation tests, which make no case, get a valid problem too), Q and K/V
// of one dtype, one query token, plain attention. Tests set what else they need on the result
// (a larger capacity, the paged layout, an 8-bit kv_dtype, q_len, a variant).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "leanattn/problem.hpp"

namespace leanattn::harness {

inline DecodeProblem test_problem(std::vector<std::int32_t> lens, std::int32_t q_heads,
                                  std::int32_t kv_heads, std::int32_t head_dim,
                                  DType dtype = DType::f16) {
  DecodeProblem p;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  for (std::int32_t len : lens) p.capacity = std::max<std::int64_t>(p.capacity, len);
  p.seq_lens = std::move(lens);
  p.q_dtype = p.kv_dtype = dtype;
  return p;
}

}  // namespace leanattn::harness
