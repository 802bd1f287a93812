// The accuracy policy every executor is held to (FlashAttention-3's rule): the error against the
// fp64 reference may be at most twice the error of a naive implementation in the same precision,
// plus a small rounding floor. NaN must appear exactly where the reference has NaN, and -inf LSE
// exactly where it has -inf. Used by the unit tests, `leanattn check` and `leanattn bench`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/host_case.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::harness {

struct Accuracy {
  double max_abs_err = 0.0;  // max |out - ref| where ref is finite
  double max_lse_err = 0.0;  // max |lse - ref_lse| where ref_lse is finite (if checked)
  double naive_err = 0.0;    // max |naive - ref|, naive in the inputs' precision
  double tolerance = 0.0;    // 2 * naive_err + floor
  double lse_tolerance = 0.0;
  std::int64_t mismatches = 0;  // NaN / inf placement differences
  std::string first_problem;    // where the first failure is, for messages
  bool ok() const {
    return mismatches == 0 && max_abs_err <= tolerance && max_lse_err <= lse_tolerance;
  }
};

// What a straightforward implementation computes in the dtype of the problem: scores
// q.k rounded to q_dtype, softmax in float rounded to q_dtype, P.V accumulated in float and
// rounded to q_dtype. [batch, q_heads, head_dim], or [rows.size(), head_dim] for a sample.
std::vector<double> naive_same_precision(const DecodeProblem& problem,
                                         const DecodeTensors& tensors);
std::vector<double> naive_same_precision(const DecodeProblem& problem, const DecodeTensors& tensors,
                                         std::span<const reference::RowId> rows);

// Compares c.out (and c.lse when with_lse) with `ref`. `naive` (from naive_same_precision) may be
// passed when already computed; otherwise it is computed here.
Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const std::vector<double>* naive = nullptr);

// Same for a sample: ref and naive hold the listed rows only (reference::naive_attention_rows).
Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const std::vector<double>& naive, std::span<const reference::RowId> rows);

// Every row of c's problem, in [batch, q_heads] order; and a spread sample of at most `count`
// rows (first and last request, the longest request, and evenly spaced others).
std::vector<reference::RowId> all_rows(const DecodeProblem& problem);
std::vector<reference::RowId> sample_rows(const DecodeProblem& problem, std::int32_t count);

}  // namespace leanattn::harness
