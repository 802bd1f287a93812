// The checkers every executor is compared with, in fp64:
//   naive_attention: two-pass softmax attention straight from the definition, independent of the
//                    planner, the state header and the shared KV addressing;
//   interpret_plan:  a scalar executor of any Plan built on core/softmax_state.hpp, which checks
//                    the planner and the merge rules alone.
// Used by the tests, `leanattn check` and `leanattn bench` (correctness of every timed run).
#pragma once

#include <span>
#include <vector>

#include "leanattn/plan.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::reference {

struct Output {
  // Rows in the batch's order of query tokens (DecodeProblem::query_start): [batch x q_len, or
  // total query tokens with query_start_loc, q_heads, ...].
  std::vector<double> out;  // [query tokens, q_heads, head_dim_v]
  std::vector<double> lse;  // [query tokens, q_heads], natural log; -inf for an empty sequence
};

// Reads q, k_cache, v_cache (and block_table) through `tensors`; writes nothing.
Output naive_attention(const DecodeProblem& problem, const DecodeTensors& tensors);

// One output row: (request, query head, query token among the request's new ones).
struct RowId {
  std::int32_t request = 0;
  std::int32_t q_head = 0;
  std::int32_t query = 0;
};

// The listed rows only (a sample of a large problem): out is [rows.size(), head_dim_v] and lse is
// [rows.size()], in the order of `rows`.
Output naive_attention_rows(const DecodeProblem& problem, const DecodeTensors& tensors,
                            std::span<const RowId> rows);

// Same result through `plan`: segments run worker by worker, then each reduction merges its
// slots in order. Throws Error("plan", ...) if the plan is inconsistent (check_plan) or was
// made for another problem.
Output interpret_plan(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors);

}  // namespace leanattn::reference
