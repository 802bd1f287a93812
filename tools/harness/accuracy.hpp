// The accuracy policy every executor is held to, row by row (docs/numerics.md, "Accuracy policy").
// For each output row (request, query head) the error against the fp64 reference may be at most
// twice the error of a naive implementation in the same precision on that row, plus a floor of a
// few roundoffs of that row's own magnitude and of its fp32 accumulation; its LSE within a
// relative 1e-5 plus the fp32 summation error of its length. Non-finite reference values are
// compared by kind: NaN exactly where the reference has NaN, +-inf exactly where it has the same
// infinity; no tolerance is ever widened by them. Used by the unit tests, `leanattn check` and
// `leanattn bench`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::harness {

// The outcome of a comparison. The error and tolerance fields describe the worst row (the
// largest error / tolerance ratio), so a message shows the row that decided.
struct Accuracy {
  double max_abs_err = 0.0;  // worst row: max |out - ref| where ref is finite
  double tolerance = 0.0;    // worst row: its tolerance
  double naive_err = 0.0;    // worst row: max |naive - ref|, naive in the inputs' precision
  double max_lse_err = 0.0;  // worst LSE row: |lse - ref_lse| (if checked)
  double lse_tolerance = 0.0;
  std::int64_t failed_rows = 0;  // rows whose error exceeds their tolerance
  std::int64_t mismatches = 0;   // elements whose kind (finite, NaN, +inf, -inf) differs
  std::string first_problem;     // where the first failure is, for messages
  bool ok() const { return mismatches == 0 && failed_rows == 0; }
};

// Compares c.out (and c.lse when with_lse) with `ref`. `naive` (from naive_same_precision) may be
// passed when already computed; otherwise it is computed here.
Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const NaiveBaseline* naive = nullptr);

// Same for a sample: ref and naive hold the listed rows only (reference::naive_attention_rows).
Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const NaiveBaseline& naive, std::span<const reference::RowId> rows);

// What a row's tolerances depend on: its length n, head_dim d, and from the naive baseline the
// sizes of its sums (weighted_abs W, score_abs S).
struct RowScale {
  std::int64_t n = 0;
  std::int32_t d = 0;
  double weighted_abs = 0.0;
  double score_abs = 0.0;
};

// The tolerance of one output row (see docs/numerics.md), u the unit roundoff of q_dtype and u32
// that of fp32: 2 naive_err + 8 u |ref|_max + 2 u32 (sqrt(n) + sqrt(d) S) W.
double row_tolerance(DType q_dtype, const RowScale& row, double naive_err, double ref_max);
// The tolerance of one LSE value: 1e-5 max(1, |ref_lse|) + 2 u32 (sqrt(n) + sqrt(d) S).
double lse_tolerance(const RowScale& row, double ref_lse);

// Every row of c's problem, in [batch, q_heads] order; and a spread sample of at most `count`
// rows (first and last request, the longest request, and evenly spaced others).
std::vector<reference::RowId> all_rows(const DecodeProblem& problem);
std::vector<reference::RowId> sample_rows(const DecodeProblem& problem, std::int32_t count);

}  // namespace leanattn::harness
