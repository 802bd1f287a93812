// The naive same-precision baseline (see naive_baseline.hpp). Its elements are decoded by the
// library's scalar converters (core/float16.hpp, core/float8.hpp: the ones the CPU engine's
// element_to_float in src/cpu/kv_elements.hpp calls, and whose rules the SIMD and CUDA loaders
// follow), so that it rounds as the engines do; read() is only the switch over the DType (the
// engines' readers are typed per element and private to them). The fp64 reference decodes on its
// own on purpose (src/reference/read_element.hpp): independent of these converters, it catches
// their bugs.
#include "harness/naive_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "leanattn/core/block_formats.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/core/float8.hpp"
#include "leanattn/core/variant_rules.hpp"

namespace leanattn::harness {

namespace {

float read(const void* base, DType type, std::int64_t i) {
  const char* at = static_cast<const char*>(base) + i * static_cast<std::int64_t>(dtype_size(type));
  std::uint16_t h = 0;
  switch (type) {
    case DType::f32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case DType::f16:
    case DType::bf16:
      std::memcpy(&h, at, 2);
      return type == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    case DType::fp8_e4m3:
      return e4m3_bits_to_float(static_cast<std::uint8_t>(*at));
    case DType::fp8_e5m2:
      return e5m2_bits_to_float(static_cast<std::uint8_t>(*at));
    case DType::int8:
      return static_cast<std::int8_t>(*at);
    case DType::q8_0:
    case DType::q4_0:
      break;  // read_kv
  }
  return 0.0f;
}

// Value i of the K or V row at unit `row`: a block format's value (core/block_formats.hpp) or
// the element.
float read_kv(const void* base, DType type, std::int64_t row, std::int32_t i) {
  if (!is_block_format(type)) return read(base, type, row + i);
  return block_format_value(static_cast<const unsigned char*>(base) + row, type, i);
}

// Q's precision (the output's and the naive arithmetic's): never an 8-bit type.
float round_to(DType type, float f) {
  switch (type) {
    case DType::f16:
      return round_to_f16(f);
    case DType::bf16:
      return round_to_bf16(f);
    default:
      return f;
  }
}

// Element offset of K or V [b, token j, head h, 0], from the layout's definition.
std::int64_t kv_offset(const DecodeProblem& p, const DecodeTensors& t, const KvStrides& st,
                       std::int32_t b, std::int64_t j, std::int32_t h) {
  if (p.layout == KvLayout::contiguous) return b * st.outer + j * st.token + h * st.head;
  const std::int64_t page = t.block_table[b * t.block_table_stride + j / p.page_size];
  return page * st.outer + (j % p.page_size) * st.token + h * st.head;
}

}  // namespace

NaiveBaseline naive_same_precision(const DecodeProblem& p, const DecodeTensors& t) {
  std::vector<reference::RowId> rows;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int32_t i = 0; i < p.query_len(b); ++i) {
      for (std::int32_t qh = 0; qh < p.q_heads; ++qh) rows.push_back({b, qh, i});
    }
  }
  return naive_same_precision(p, t, rows);
}

NaiveBaseline naive_same_precision(const DecodeProblem& p, const DecodeTensors& t,
                                   std::span<const reference::RowId> rows) {
  const std::int32_t d = p.head_dim, dv = p.value_dim();
  const DType qt = p.q_dtype;
  // 1 / sqrt(head_dim) unless the problem sets a scale: computed here, not by the problem.
  const float scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(d));
  NaiveBaseline r;
  r.out.assign(rows.size() * static_cast<std::size_t>(dv), 0.0);
  r.weighted_abs.assign(rows.size(), 0.0);
  r.score_abs.assign(rows.size(), 0.0);
  std::vector<float> s, acc(static_cast<std::size_t>(dv)), abs_acc(static_cast<std::size_t>(dv));
  const AttentionVariant& var = p.variant;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const std::int32_t b = rows[row].request, qh = rows[row].q_head, query = rows[row].query;
    const std::int64_t n = p.seq_lens[b];
    if (n == 0) continue;
    const std::int32_t h = qh / (p.q_heads / p.kv_heads);
    // The keys this query sees and its position (the variants: docs/numerics.md).
    const std::int32_t q_count = p.query_len(b);
    const KeyRange seen = visible_keys(n, q_count, query, var.causal, var.window_left);
    const std::int64_t pos = query_position(n, q_count, query);
    const QueryIndex at = query_index(p, b, query);
    const std::int64_t q_base =
        at.batch * t.q_stride_batch + at.token * t.q_stride_token + qh * t.q_stride_head;
    s.assign(static_cast<std::size_t>(seen.end - seen.begin), 0.0f);
    float m = var.sinks ? t.sinks[qh] : -std::numeric_limits<float>::infinity();
    const std::int64_t bias_row =
        at.batch * t.bias_stride_batch + at.token * t.bias_stride_token + qh * t.bias_stride_head;
    double score_abs = 0.0;
    for (std::int64_t j = seen.begin; j < seen.end; ++j) {
      float dot = 0.0f, dot_abs = 0.0f;
      const std::int64_t kb = kv_offset(p, t, t.k_strides, b, j, h);
      const float ks = t.k_scale ? t.k_scale[kv_offset(p, t, t.k_scale_strides, b, j, h)] : 1.0f;
      for (std::int32_t i = 0; i < d; ++i) {
        const float x = read(t.q, qt, q_base + i) * (read_kv(t.k_cache, p.kv_dtype, kb, i) * ks);
        dot += x;
        dot_abs += std::abs(x);
      }
      score_abs = std::max(score_abs, static_cast<double>(dot_abs * scale));
      float x = round_to(qt, round_to(qt, dot) * scale);
      if (var.softcap > 0.0f) x = round_to(qt, apply_softcap(x, var.softcap));
      if (var.alibi) x = round_to(qt, x + alibi_bias(t.alibi_slopes[qh], j, pos));
      if (var.bias) x = round_to(qt, x + read(t.bias, p.bias_dtype, bias_row + j));
      s[static_cast<std::size_t>(j - seen.begin)] = x;
      m = std::max(m, x);
    }
    // Every key hidden by the bias (and no sink): output 0, as an empty request.
    if (m == -std::numeric_limits<float>::infinity()) continue;
    float l = var.sinks ? std::exp(t.sinks[qh] - m) : 0.0f;  // a sink joins the denominator
    for (float& x : s) {
      x = std::exp(x - m);
      l += x;
    }
    std::fill(acc.begin(), acc.end(), 0.0f);
    std::fill(abs_acc.begin(), abs_acc.end(), 0.0f);
    for (std::int64_t j = seen.begin; j < seen.end; ++j) {
      const float pj = round_to(qt, s[static_cast<std::size_t>(j - seen.begin)] / l);
      const std::int64_t vb = kv_offset(p, t, t.v_strides, b, j, h);
      const float vs = t.v_scale ? t.v_scale[kv_offset(p, t, t.v_scale_strides, b, j, h)] : 1.0f;
      for (std::int32_t i = 0; i < dv; ++i) {
        const float v = read_kv(t.v_cache, p.value_dtype(), vb, i) * vs;
        acc[static_cast<std::size_t>(i)] += pj * v;
        abs_acc[static_cast<std::size_t>(i)] += std::abs(pj * v);
      }
    }
    double wabs = 0.0;
    for (std::int32_t i = 0; i < dv; ++i) {
      r.out[row * static_cast<std::size_t>(dv) + static_cast<std::size_t>(i)] =
          round_to(qt, acc[static_cast<std::size_t>(i)]);
      wabs = std::max(wabs, static_cast<double>(abs_acc[static_cast<std::size_t>(i)]));
    }
    r.weighted_abs[row] = wabs;
    r.score_abs[row] = score_abs;
  }
  return r;
}

}  // namespace leanattn::harness
