// The naive same-precision baseline of the accuracy policy (accuracy.hpp): what a straightforward
// implementation computes in the problem's dtype, and per row the magnitude its rounding errors
// scale with. Computes the softmax scale and the KV addresses itself from the raw inputs, sharing
// nothing with the engines but the element converters (it must round as they do; the fp64
// reference checks the converters), so that a bug in shared code cannot loosen the tolerance it
// sets.
#pragma once

#include <span>
#include <vector>

#include "leanattn/problem.hpp"
#include "leanattn/reference.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::harness {

struct NaiveBaseline {
  // Scores q.k rounded to q_dtype, softmax in float with probabilities rounded to q_dtype, P.V
  // accumulated in float and rounded to q_dtype: [rows, head_dim_v].
  std::vector<double> out;
  // Per row: max over dimensions i of sum_j p_j |v_ji| (p the probabilities): the size of what
  // the P.V accumulation adds up, which bounds its rounding error. [rows].
  std::vector<double> weighted_abs;
  // Per row: max over keys j of scale * sum_i |q_i k_ji|: the size of what a score's dot product
  // adds up, which bounds its rounding error. [rows].
  std::vector<double> score_abs;
};

// Every row in [batch, q_len, q_heads] order, or the listed rows in their order.
NaiveBaseline naive_same_precision(const DecodeProblem& problem, const DecodeTensors& tensors);
NaiveBaseline naive_same_precision(const DecodeProblem& problem, const DecodeTensors& tensors,
                                   std::span<const reference::RowId> rows);

}  // namespace leanattn::harness
