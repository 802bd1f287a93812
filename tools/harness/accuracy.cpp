// The accuracy policy (see accuracy.hpp and docs/numerics.md).
#include "harness/accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace leanattn::harness {

namespace {

// Unit roundoff of a dtype.
double unit_roundoff(DType type) {
  switch (type) {
    case DType::f32:
      return std::ldexp(1.0, -24);
    case DType::f16:
      return std::ldexp(1.0, -11);
    case DType::bf16:
      return std::ldexp(1.0, -8);
    default:  // 8-bit types hold K and V only; the output is never one of them
      return std::ldexp(1.0, -24);
  }
}

// Index of a row in [query tokens, q_heads] order (out and lse of a dense HostCase).
std::size_t out_row(const DecodeProblem& p, const reference::RowId& r) {
  return static_cast<std::size_t>(p.query_start(r.request) + r.query) * p.q_heads + r.q_head;
}

const double kU32 = std::ldexp(1.0, -24);

// The fp32 rounding the engines' sums may add: sqrt(n) u32 relative for the n-term softmax sums,
// and sqrt(d) u32 S absolute for each score's d-term dot product.
double fp32_sums(const RowScale& row) {
  return kU32 * (std::sqrt(static_cast<double>(row.n)) +
                 std::sqrt(static_cast<double>(row.d)) * row.score_abs);
}

// Same kind: both NaN, the same infinity, or both finite.
bool same_kind(double ref, double x) {
  if (std::isnan(ref) || std::isnan(x)) return std::isnan(ref) && std::isnan(x);
  if (std::isinf(ref) || std::isinf(x)) return ref == x;
  return true;
}

// err / tol, with 0 / 0 = 0 (an exact row whose tolerance is 0, as an empty request's zeros).
double ratio(double err, double tol) {
  if (err <= tol) return tol > 0.0 ? err / tol : 0.0;
  return tol > 0.0 ? err / tol : std::numeric_limits<double>::infinity();
}

std::string row_name(const char* what, const reference::RowId& r) {
  return std::string(what) + "[" + std::to_string(r.request) + "][" + std::to_string(r.query) +
         "][" + std::to_string(r.q_head) + "]";
}

}  // namespace

double row_tolerance(DType q_dtype, const RowScale& row, double naive_err, double ref_max) {
  return 2.0 * naive_err + 8.0 * unit_roundoff(q_dtype) * ref_max +
         2.0 * fp32_sums(row) * row.weighted_abs;
}

double lse_tolerance(const RowScale& row, double ref_lse) {
  return 1e-5 * std::max(1.0, std::abs(ref_lse)) + 2.0 * fp32_sums(row);
}

std::vector<reference::RowId> all_rows(const DecodeProblem& p) {
  std::vector<reference::RowId> rows;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int32_t i = 0; i < p.query_len(b); ++i) {
      for (std::int32_t qh = 0; qh < p.q_heads; ++qh) rows.push_back({b, qh, i});
    }
  }
  return rows;
}

std::vector<reference::RowId> sample_rows(const DecodeProblem& p, std::int32_t count) {
  const std::int64_t total = p.total_queries() * p.q_heads;
  if (total <= count) return all_rows(p);
  // The request holding query token `token` (of the batch's order, DecodeProblem::query_start).
  auto request_of = [&](std::int64_t token) {
    if (!p.has_query_start_loc()) return static_cast<std::int32_t>(token / p.q_len);
    const auto& loc = p.query_start_loc;
    return static_cast<std::int32_t>(std::upper_bound(loc.begin(), loc.end(), token) - loc.begin() -
                                     1);
  };
  std::vector<reference::RowId> rows;
  std::int32_t longest = -1;  // the longest request with query tokens: its last row
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    if (p.query_len(b) > 0 && (longest < 0 || p.seq_lens[b] > p.seq_lens[longest])) longest = b;
  }
  rows.push_back({longest, p.q_heads - 1, p.query_len(longest) - 1});
  for (std::int32_t i = 0; i + 1 < count; ++i) {
    const std::int64_t k = i * (total - 1) / std::max(1, count - 2);
    const std::int64_t token = k / p.q_heads;
    const std::int32_t b = request_of(token);
    rows.push_back({b, static_cast<std::int32_t>(k % p.q_heads),
                    static_cast<std::int32_t>(token - p.query_start(b))});
  }
  return rows;
}

Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const NaiveBaseline* naive) {
  const auto rows = all_rows(c.problem);
  if (naive != nullptr) return check_accuracy(c, ref, with_lse, *naive, rows);
  const NaiveBaseline own = naive_same_precision(c.problem, c.tensors(), rows);
  return check_accuracy(c, ref, with_lse, own, rows);
}

Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const NaiveBaseline& naive, std::span<const reference::RowId> rows) {
  const DecodeProblem& p = c.problem;
  const std::size_t d = static_cast<std::size_t>(p.value_dim());  // output row width
  const std::vector<double> all = read_output(c);
  Accuracy a;
  double worst = -1.0, worst_lse = -1.0;
  auto scale_of = [&](std::size_t row, std::int64_t n) {
    return RowScale{n, p.head_dim, naive.weighted_abs[row], naive.score_abs[row]};
  };
  auto fail = [&](const std::string& what) {
    if (a.first_problem.empty()) a.first_problem = what;
  };
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const reference::RowId id = rows[row];
    const std::int64_t n = p.seq_lens[static_cast<std::size_t>(id.request)];
    const std::size_t at = out_row(p, id) * d;
    double err = 0.0, naive_err = 0.0, ref_max = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      const double r = ref.out[row * d + i];
      const double x = all[at + i];
      if (!same_kind(r, x)) {
        ++a.mismatches;
        fail(row_name("out", id) + "[" + std::to_string(i) + "] = " + std::to_string(x) +
             ", reference " + std::to_string(r));
        continue;
      }
      if (!std::isfinite(r)) continue;
      ref_max = std::max(ref_max, std::abs(r));
      err = std::max(err, std::abs(x - r));
      const double nv = naive.out[row * d + i];
      if (std::isfinite(nv)) naive_err = std::max(naive_err, std::abs(nv - r));
    }
    const double tol = row_tolerance(p.q_dtype, scale_of(row, n), naive_err, ref_max);
    const double q = ratio(err, tol);
    if (q > worst) {
      worst = q;
      a.max_abs_err = err;
      a.tolerance = tol;
      a.naive_err = naive_err;
    }
    if (err > tol) {
      ++a.failed_rows;
      fail(row_name("out", id) + " (" + std::to_string(n) + " tokens): max error " +
           std::to_string(err) + " > tolerance " + std::to_string(tol));
    }
  }
  if (!with_lse) return a;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const reference::RowId id = rows[row];
    const std::int64_t n = p.seq_lens[static_cast<std::size_t>(id.request)];
    const double r = ref.lse[row];
    const double x = c.lse[out_row(p, id)];
    if (!same_kind(r, x)) {
      ++a.mismatches;
      fail(row_name("lse", id) + " = " + std::to_string(x) + ", reference " + std::to_string(r));
      continue;
    }
    if (!std::isfinite(r)) continue;
    const double err = std::abs(x - r), tol = lse_tolerance(scale_of(row, n), r);
    const double q = ratio(err, tol);
    if (q > worst_lse) {
      worst_lse = q;
      a.max_lse_err = err;
      a.lse_tolerance = tol;
    }
    if (err > tol) {
      ++a.failed_rows;
      fail(row_name("lse", id) + " (" + std::to_string(n) + " tokens) = " + std::to_string(x) +
           ", reference " + std::to_string(r) + ": error > tolerance " + std::to_string(tol));
    }
  }
  return a;
}

}  // namespace leanattn::harness
