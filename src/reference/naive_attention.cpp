// fp64 two-pass softmax attention, straight from the definition: for each query head, score
// every key, subtract the max, exponentiate, normalise, weight the values. Shares no code with
// the planner, the state header or the engines' KV addressing.
#include <cmath>
#include <limits>

#include "leanattn/reference.hpp"
#include "read_element.hpp"

namespace leanattn::reference {

Output naive_attention(const DecodeProblem& p, const DecodeTensors& t) {
  validate(p);
  validate(p, t);
  const std::int32_t d = p.head_dim;
  const std::int32_t group = p.group_size();
  const double scale = p.softmax_scale();
  Output r;
  r.out.assign(static_cast<std::size_t>(p.batch()) * p.q_heads * d, 0.0);
  r.lse.assign(static_cast<std::size_t>(p.batch()) * p.q_heads,
               -std::numeric_limits<double>::infinity());
  std::vector<double> s, q(static_cast<std::size_t>(d));
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    const std::int64_t n = p.seq_lens[b];
    if (n == 0) continue;
    // Element offset of K/V [b, token j, head h, 0], computed here without shared helpers.
    auto kv_offset = [&](const KvStrides& st, std::int64_t j, std::int32_t h) -> std::int64_t {
      if (p.layout == KvLayout::contiguous) return b * st.outer + j * st.token + h * st.head;
      const std::int64_t page = t.block_table[b * t.block_table_stride + j / p.page_size];
      return page * st.outer + (j % p.page_size) * st.token + h * st.head;
    };
    for (std::int32_t qh = 0; qh < p.q_heads; ++qh) {
      const std::int32_t h = qh / group;
      for (std::int32_t i = 0; i < d; ++i) {
        q[static_cast<std::size_t>(i)] =
            read_element(t.q, p.q_dtype, b * t.q_stride_batch + qh * t.q_stride_head + i);
      }
      s.assign(static_cast<std::size_t>(n), 0.0);
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t base = kv_offset(t.k_strides, j, h);
        double dot = 0.0;
        for (std::int32_t i = 0; i < d; ++i) {
          dot += q[static_cast<std::size_t>(i)] * read_element(t.k_cache, p.kv_dtype, base + i);
        }
        s[static_cast<std::size_t>(j)] = dot * scale;
        nan = nan || std::isnan(dot);
        m = std::max(m, s[static_cast<std::size_t>(j)]);
      }
      double l = 0.0;
      for (double& x : s) {
        x = std::exp(x - m);
        l += x;
      }
      if (nan) l = std::numeric_limits<double>::quiet_NaN();
      double* o = &r.out[(static_cast<std::size_t>(b) * p.q_heads + qh) * d];
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t base = kv_offset(t.v_strides, j, h);
        const double w = s[static_cast<std::size_t>(j)] / l;
        for (std::int32_t i = 0; i < d; ++i) {
          o[i] += w * read_element(t.v_cache, p.kv_dtype, base + i);
        }
      }
      r.lse[static_cast<std::size_t>(b) * p.q_heads + qh] = m + std::log(l);
    }
  }
  return r;
}

}  // namespace leanattn::reference
