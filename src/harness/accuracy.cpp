// The accuracy policy (see accuracy.hpp).
#include "harness/accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/kv_addressing.hpp"
#include "leanattn/core/variant_rules.hpp"

namespace leanattn::harness {

namespace {

float read(const void* base, DType type, std::int64_t i) {
  if (type == DType::f32) return static_cast<const float*>(base)[i];
  const std::uint16_t h = static_cast<const std::uint16_t*>(base)[i];
  return type == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
}

float round_to(DType type, float f) {
  switch (type) {
    case DType::f32:
      return f;
    case DType::f16:
      return round_to_f16(f);
    case DType::bf16:
      return round_to_bf16(f);
  }
  return f;
}

// Unit roundoff of a dtype.
double unit_roundoff(DType type) {
  switch (type) {
    case DType::f32:
      return std::ldexp(1.0, -24);
    case DType::f16:
      return std::ldexp(1.0, -11);
    case DType::bf16:
      return std::ldexp(1.0, -8);
  }
  return 0.0;
}

// Index of a row in [batch, q_len, q_heads] order (out and lse of a dense HostCase).
std::size_t out_row(const DecodeProblem& p, const reference::RowId& r) {
  return (static_cast<std::size_t>(r.request) * p.q_len + r.query) * p.q_heads + r.q_head;
}

}  // namespace

std::vector<reference::RowId> all_rows(const DecodeProblem& p) {
  std::vector<reference::RowId> rows;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int32_t i = 0; i < p.q_len; ++i) {
      for (std::int32_t qh = 0; qh < p.q_heads; ++qh) rows.push_back({b, qh, i});
    }
  }
  return rows;
}

std::vector<reference::RowId> sample_rows(const DecodeProblem& p, std::int32_t count) {
  const std::int64_t per_request = static_cast<std::int64_t>(p.q_len) * p.q_heads;
  const std::int64_t total = p.batch() * per_request;
  if (total <= count) return all_rows(p);
  std::vector<reference::RowId> rows;
  const auto longest = static_cast<std::int32_t>(
      std::max_element(p.seq_lens.begin(), p.seq_lens.end()) - p.seq_lens.begin());
  rows.push_back({longest, p.q_heads - 1, p.q_len - 1});
  for (std::int32_t i = 0; i + 1 < count; ++i) {
    const std::int64_t k = i * (total - 1) / std::max(1, count - 2);
    const std::int64_t in_request = k % per_request;
    rows.push_back({static_cast<std::int32_t>(k / per_request),
                    static_cast<std::int32_t>(in_request % p.q_heads),
                    static_cast<std::int32_t>(in_request / p.q_heads)});
  }
  return rows;
}

std::vector<double> naive_same_precision(const DecodeProblem& p, const DecodeTensors& t) {
  const auto rows = all_rows(p);
  return naive_same_precision(p, t, rows);
}

std::vector<double> naive_same_precision(const DecodeProblem& p, const DecodeTensors& t,
                                         std::span<const reference::RowId> rows) {
  const std::int32_t d = p.head_dim;
  const std::int32_t group = p.group_size();
  const DType qt = p.q_dtype;
  KvAddressing k{t.k_strides.outer, t.k_strides.token,
                 t.k_strides.head,  p.layout == KvLayout::paged ? p.page_size : 0,
                 t.block_table,     t.block_table_stride};
  KvAddressing v = k;
  v.outer_stride = t.v_strides.outer;
  v.token_stride = t.v_strides.token;
  v.head_stride = t.v_strides.head;
  std::vector<double> out(rows.size() * static_cast<std::size_t>(d), 0.0);
  std::vector<float> s, acc(static_cast<std::size_t>(d));
  const AttentionVariant& var = p.variant;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const std::int32_t b = rows[row].request, qh = rows[row].q_head, query = rows[row].query;
    const std::int64_t n = p.seq_lens[b];
    if (n == 0) continue;
    const std::int32_t h = qh / group;
    const KeyRange seen = visible_keys(n, p.q_len, query, var.causal, var.window_left);
    const std::int64_t pos = query_position(n, p.q_len, query);
    const std::int64_t q_base =
        b * t.q_stride_batch + query * t.q_stride_token + qh * t.q_stride_head;
    s.assign(static_cast<std::size_t>(seen.end - seen.begin), 0.0f);
    float m = var.sinks ? t.sinks[qh] : -std::numeric_limits<float>::infinity();
    for (std::int64_t j = seen.begin; j < seen.end; ++j) {
      float dot = 0.0f;
      const std::int64_t kb = k.row(b, j, h);
      for (std::int32_t i = 0; i < d; ++i) {
        dot += read(t.q, qt, q_base + i) * read(t.k_cache, p.kv_dtype, kb + i);
      }
      float x = round_to(qt, round_to(qt, dot) * p.softmax_scale());
      if (var.softcap > 0.0f) x = round_to(qt, apply_softcap(x, var.softcap));
      if (var.alibi) x = round_to(qt, x + alibi_bias(t.alibi_slopes[qh], j, pos));
      s[static_cast<std::size_t>(j - seen.begin)] = x;
      m = std::max(m, x);
    }
    float l = var.sinks ? std::exp(t.sinks[qh] - m) : 0.0f;
    for (float& x : s) {
      x = std::exp(x - m);
      l += x;
    }
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::int64_t j = seen.begin; j < seen.end; ++j) {
      const float pj = round_to(qt, s[static_cast<std::size_t>(j - seen.begin)] / l);
      const std::int64_t vb = v.row(b, j, h);
      for (std::int32_t i = 0; i < d; ++i) {
        acc[static_cast<std::size_t>(i)] += pj * read(t.v_cache, p.kv_dtype, vb + i);
      }
    }
    for (std::int32_t i = 0; i < d; ++i) {
      out[row * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)] =
          round_to(qt, acc[static_cast<std::size_t>(i)]);
    }
  }
  return out;
}

Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const std::vector<double>* naive) {
  const auto rows = all_rows(c.problem);
  if (naive != nullptr) return check_accuracy(c, ref, with_lse, *naive, rows);
  const std::vector<double> own = naive_same_precision(c.problem, c.tensors(), rows);
  return check_accuracy(c, ref, with_lse, own, rows);
}

Accuracy check_accuracy(HostCase& c, const reference::Output& ref, bool with_lse,
                        const std::vector<double>& naive, std::span<const reference::RowId> rows) {
  const DecodeProblem& p = c.problem;
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const std::vector<double> all = read_output(c);
  Accuracy a;
  double ref_max = 0.0;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const std::size_t at = out_row(p, rows[row]) * d;
    for (std::size_t i = 0; i < d; ++i) {
      const double r = ref.out[row * d + i];
      const double x = all[at + i];
      auto where = [&] {
        return "out[" + std::to_string(rows[row].request) + "][" + std::to_string(rows[row].query) +
               "][" + std::to_string(rows[row].q_head) + "][" + std::to_string(i) +
               "] = " + std::to_string(x) + ", reference " + std::to_string(r);
      };
      if (std::isnan(r) != std::isnan(x) || std::isinf(r) != std::isinf(x)) {
        if (a.mismatches++ == 0) a.first_problem = where();
        continue;
      }
      if (!std::isfinite(r)) continue;
      ref_max = std::max(ref_max, std::abs(r));
      const double e = std::abs(x - r);
      if (e > a.max_abs_err) {
        a.max_abs_err = e;
        if (a.mismatches == 0) a.first_problem = where();
      }
      if (std::isfinite(naive[row * d + i])) {
        a.naive_err = std::max(a.naive_err, std::abs(naive[row * d + i] - r));
      }
    }
  }
  a.tolerance = 2.0 * a.naive_err + 8.0 * unit_roundoff(p.q_dtype) * std::max(1.0, ref_max);
  a.lse_tolerance = 1e-5;
  if (with_lse) {
    for (std::size_t row = 0; row < rows.size(); ++row) {
      const double r = ref.lse[row];
      const double x = c.lse[out_row(p, rows[row])];
      a.lse_tolerance = std::max(a.lse_tolerance, 1e-5 * std::max(1.0, std::abs(r)));
      const bool same_class =
          std::isnan(r) == std::isnan(x) && (std::isinf(r) ? x == r : !std::isinf(x));
      if (!same_class) {
        if (a.mismatches++ == 0) {
          a.first_problem = "lse[" + std::to_string(rows[row].request) + "][" +
                            std::to_string(rows[row].query) + "][" +
                            std::to_string(rows[row].q_head) + "] = " + std::to_string(x) +
                            ", reference " + std::to_string(r);
        }
        continue;
      }
      if (std::isfinite(r)) a.max_lse_err = std::max(a.max_lse_err, std::abs(x - r));
    }
  }
  return a;
}

}  // namespace leanattn::harness
