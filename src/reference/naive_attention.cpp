// fp64 two-pass softmax attention, straight from the definition: for each query head, score
// every key (a quantized cache's elements dequantized literally: stored x scale), subtract the max,
// exponentiate, normalise, weight the values. Shares no code with the planner, the state header,
// the engines' KV addressing or DecodeProblem::softmax_scale(): everything it can compute from the
// raw inputs, it computes itself.
#include <cmath>
#include <limits>
#include <vector>

#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"
#include "read_element.hpp"

namespace leanattn::reference {

namespace {

// Output row (b, query i, qh): two-pass softmax over the keys that query sees, in fp64, with
// every variant written out literally (docs/numerics.md, "Variants").
void naive_row(const DecodeProblem& p, const DecodeTensors& t, RowId row, double* out,
               double* lse) {
  const std::int32_t b = row.request, qh = row.q_head;
  const std::int32_t d = p.head_dim, dv = p.value_dim();
  const std::int32_t h = qh / (p.q_heads / p.kv_heads);
  const std::int64_t n = p.seq_lens[b];
  const AttentionVariant& var = p.variant;
  for (std::int32_t i = 0; i < dv; ++i) out[i] = 0.0;
  *lse = -std::numeric_limits<double>::infinity();
  if (n == 0) return;
  // The request's query tokens: query_start_loc's difference, or q_len for every request; and
  // where its rows sit in q (and bias): the token dimension runs over the batch with
  // query_start_loc, the batch index is then 0.
  const bool packed = !p.query_start_loc.empty();
  const std::int64_t q_count = packed ? p.query_start_loc[static_cast<std::size_t>(b) + 1] -
                                            p.query_start_loc[static_cast<std::size_t>(b)]
                                      : p.q_len;
  const std::int64_t qb = packed ? 0 : b;
  const std::int64_t qt =
      packed ? p.query_start_loc[static_cast<std::size_t>(b)] + row.query : row.query;
  // The query is the (q_count - query)-th last token; it sees keys up to itself (causal) or all,
  // and with a window only those at most window_left positions before it.
  const std::int64_t pos = n - q_count + row.query;
  auto visible = [&](std::int64_t j) {
    if (var.causal && j > pos) return false;
    if (var.window_left >= 0 && j < pos - var.window_left) return false;
    return true;
  };
  // Element offset of K/V [b, token j, head h, 0], computed here without shared helpers.
  auto kv_offset = [&](const KvStrides& st, std::int64_t j) -> std::int64_t {
    if (p.layout == KvLayout::contiguous) return b * st.outer + j * st.token + h * st.head;
    const std::int64_t page = t.block_table[b * t.block_table_stride + j / p.page_size];
    return page * st.outer + (j % p.page_size) * st.token + h * st.head;
  };
  // A quantized cache's value is stored x scale; the scale of (b, j, h) sits where the cache's
  // element would with the scales' strides (per-tensor and per-head scales have stride 0 where
  // they do not move).
  const bool quantized = is_quantized(p.kv_dtype);
  auto k_scale = [&](std::int64_t j) {
    return quantized ? static_cast<double>(t.k_scale[kv_offset(t.k_scale_strides, j)]) : 1.0;
  };
  auto v_scale = [&](std::int64_t j) {
    return quantized ? static_cast<double>(t.v_scale[kv_offset(t.v_scale_strides, j)]) : 1.0;
  };
  std::vector<double> q(static_cast<std::size_t>(d)), s(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < d; ++i) {
    q[static_cast<std::size_t>(i)] = read_element(
        t.q, p.q_dtype, qb * t.q_stride_batch + qt * t.q_stride_token + qh * t.q_stride_head + i);
  }
  // The scale the problem sets, or by default 1 / sqrt(head_dim) as the float the API defines
  // (DecodeProblem::scale is a float): computed here from head_dim, not by the problem.
  const double scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(d));
  const double cap = var.softcap;
  const double slope = var.alibi ? t.alibi_slopes[qh] : 0.0;
  const double inf = std::numeric_limits<double>::infinity();
  // The bias row of (b, query, qh): key j at bias_row + j.
  const std::int64_t bias_row =
      qb * t.bias_stride_batch + qt * t.bias_stride_token + qh * t.bias_stride_head;
  auto bias = [&](std::int64_t j) { return read_element(t.bias, p.bias_dtype, bias_row + j); };
  // Keys the bias hides (-inf) are not read at all, as ggml's flash attention skips them.
  auto hidden = [&](std::int64_t j) { return !visible(j) || (var.bias && bias(j) == -inf); };
  double m = -inf;
  bool nan = false;
  for (std::int64_t j = 0; j < n; ++j) {
    double& x = s[static_cast<std::size_t>(j)];
    if (hidden(j)) {
      x = -inf;  // exp(-inf - m) = 0: an invisible key has no weight
      continue;
    }
    const std::int64_t base = kv_offset(t.k_strides, j);
    const double ks = k_scale(j);
    double dot = 0.0;
    for (std::int32_t i = 0; i < d; ++i) {
      dot += q[static_cast<std::size_t>(i)] * (read_kv(t.k_cache, p.kv_dtype, base, i) * ks);
    }
    x = dot * scale;
    if (cap > 0.0) x = cap * std::tanh(x / cap);
    if (var.alibi) x += -slope * std::abs(static_cast<double>(j - pos));
    if (var.bias) x += bias(j);
    nan = nan || std::isnan(x);
    m = std::max(m, x);
  }
  // Every key hidden by the bias: the row sees nothing, output 0 and lse -inf as an empty
  // request (no sink joins it).
  if (!nan && m == -inf) return;
  // A sink is one more logit in the denominator, with no value.
  const double sink = var.sinks ? t.sinks[qh] : -inf;
  m = std::max(m, sink);
  double l = var.sinks ? std::exp(sink - m) : 0.0;
  for (double& x : s) {
    x = std::exp(x - m);
    l += x;
  }
  if (nan || std::isnan(sink)) l = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t j = 0; j < n; ++j) {
    // An invisible or hidden key's value is never read (a NaN there does not count).
    if (hidden(j)) continue;
    const double w = s[static_cast<std::size_t>(j)] / l;
    const std::int64_t base = kv_offset(t.v_strides, j);
    const double vs = v_scale(j);
    for (std::int32_t i = 0; i < dv; ++i)
      out[i] += w * (read_kv(t.v_cache, p.value_dtype(), base, i) * vs);
  }
  *lse = m + std::log(l);
}

}  // namespace

Output naive_attention(const DecodeProblem& p, const DecodeTensors& t) {
  validate(p);  // before query_start_loc is read
  std::vector<RowId> rows;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    const std::int32_t q_count = p.query_start_loc.empty()
                                     ? p.q_len
                                     : p.query_start_loc[static_cast<std::size_t>(b) + 1] -
                                           p.query_start_loc[static_cast<std::size_t>(b)];
    for (std::int32_t i = 0; i < q_count; ++i) {
      for (std::int32_t qh = 0; qh < p.q_heads; ++qh) rows.push_back({b, qh, i});
    }
  }
  return naive_attention_rows(p, t, rows);
}

Output naive_attention_rows(const DecodeProblem& p, const DecodeTensors& t,
                            std::span<const RowId> rows) {
  validate(p);
  validate(p, t);
  Output r;
  r.out.resize(rows.size() * static_cast<std::size_t>(p.value_dim()));
  r.lse.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    require(rows[i].request >= 0 && rows[i].request < p.batch() && rows[i].q_head >= 0 &&
                rows[i].q_head < p.q_heads && rows[i].query >= 0 &&
                rows[i].query < p.query_len(rows[i].request),
            "rows", [&] { return "must name rows inside the problem"; });
    naive_row(p, t, rows[i], &r.out[i * static_cast<std::size_t>(p.value_dim())], &r.lse[i]);
  }
  return r;
}

}  // namespace leanattn::reference
