// The plan interpreter: executes any Plan one segment at a time in double precision, using the
// softmax-state rules of core/softmax_state.hpp and the shared KV addressing. Slots and outputs
// are tracked so that a plan which writes an output twice, reads a slot before it is written or
// leaves an output unwritten is reported instead of producing numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "leanattn/core/kv_addressing.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "leanattn/core/variant_rules.hpp"
#include "leanattn/error.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"
#include "read_element.hpp"

namespace leanattn::reference {

namespace {

// State of the rows of one pair (its query tokens x group, row r = query r / group, head r %
// group): stats
// [rows], o [rows, head_dim_v].
struct PairState {
  std::vector<SoftmaxStats<double>> stats;
  std::vector<double> o;
  PairState(std::int32_t rows, std::int32_t dim)
      : stats(static_cast<std::size_t>(rows), empty_stats<double>()),
        o(static_cast<std::size_t>(rows) * dim, 0.0) {}
};

class Interpreter {
 public:
  Interpreter(const DecodeProblem& p, const Plan& plan, const DecodeTensors& t)
      : p_(p), plan_(plan), t_(t), group_(p.group_size()), d_(p.value_dim()), dk_(p.head_dim) {
    k_ = kv_addressing(p, t, t.k_strides);
    v_ = kv_addressing(p, t, t.v_strides);
    // A quantized cache's scales: addressed like the cache, with their own strides.
    k_scale_ = kv_addressing(p, t, t.k_scale_strides);
    v_scale_ = kv_addressing(p, t, t.v_scale_strides);
    const auto tokens = static_cast<std::size_t>(p.total_queries());
    out_.out.assign(tokens * p.q_heads * d_, std::numeric_limits<double>::quiet_NaN());
    out_.lse.assign(tokens * p.q_heads, std::numeric_limits<double>::quiet_NaN());
    written_.assign(static_cast<std::size_t>(p.batch()) * p.kv_heads, 0);
    slots_.assign(static_cast<std::size_t>(plan.num_slots), PairState(0, 0));
    slot_written_.assign(static_cast<std::size_t>(plan.num_slots), 0);
  }

  Output run() {
    for (std::int32_t w = 0; w < plan_.workers; ++w) {
      for (const Segment& s : plan_.worker_segments(w)) run_segment(s);
    }
    for (const Reduction& r : plan_.reductions) reduce(r);
    for (std::size_t i = 0; i < written_.size(); ++i) {
      if (written_[i] != 1) {
        throw Error("plan", "writes the output of pair " + std::to_string(i) + " " +
                                std::to_string(written_[i]) + " times (must be once)");
      }
    }
    return std::move(out_);
  }

 private:
  void run_segment(const Segment& s) {
    const std::int32_t rows = p_.pair_rows(s.request), q_count = p_.query_len(s.request);
    PairState st(rows, d_);
    const std::int64_t len = p_.seq_lens[s.request];
    const double scale = p_.softmax_scale();
    const AttentionVariant& var = p_.variant;
    std::vector<double> scores, probs;
    for (std::int32_t tile = s.tile_begin; tile < s.tile_end; ++tile) {
      const KeyRange keys = plan_.tile_keys(s.request, tile, tile + 1);
      for (std::int32_t r = 0; r < rows; ++r) {
        const std::int32_t query = r / group_;
        const std::int32_t qh = s.kv_head * group_ + r % group_;
        const KeyRange seen = visible_keys(len, q_count, query, var.causal, var.window_left);
        const std::int64_t t0 = std::max(keys.begin, seen.begin);
        const std::int64_t t1 = std::min(keys.end, seen.end);
        if (t1 <= t0) continue;  // no key of this tile is visible to the row
        const auto n = static_cast<std::size_t>(t1 - t0);
        scores.resize(n);
        probs.resize(n);
        const QueryIndex at = query_index(p_, s.request, query);
        const std::int64_t q_base =
            at.batch * t_.q_stride_batch + at.token * t_.q_stride_token + qh * t_.q_stride_head;
        const std::int64_t pos = query_position(len, q_count, query);
        const std::int64_t bias_row = at.batch * t_.bias_stride_batch +
                                      at.token * t_.bias_stride_token + qh * t_.bias_stride_head;
        for (std::int64_t j = t0; j < t1; ++j) {
          const std::int64_t kb = k_.row(s.request, j, s.kv_head);
          const double ks = scale_of(t_.k_scale, k_scale_, s.request, j, s.kv_head);
          double dot = 0.0;
          for (std::int32_t i = 0; i < dk_; ++i) {
            dot += read_element(t_.q, p_.q_dtype, q_base + i) *
                   (read_kv(t_.k_cache, p_.kv_dtype, kb, i) * ks);
          }
          double x = dot * scale;
          if (var.softcap > 0.0f) x = apply_softcap<double>(x, var.softcap);
          if (var.alibi) x += alibi_bias<double>(t_.alibi_slopes[qh], j, pos);
          if (var.bias) x += read_element(t_.bias, p_.bias_dtype, bias_row + j);
          scores[static_cast<std::size_t>(j - t0)] = x;
        }
        const double rescale = update_with_block(st.stats[static_cast<std::size_t>(r)],
                                                 scores.data(), probs.data(), static_cast<int>(n));
        double* o = &st.o[static_cast<std::size_t>(r) * d_];
        for (std::int32_t i = 0; i < d_; ++i) o[i] *= rescale;
        for (std::int64_t j = t0; j < t1; ++j) {
          const std::int64_t vb = v_.row(s.request, j, s.kv_head);
          const double pj = probs[static_cast<std::size_t>(j - t0)];
          const double vs = scale_of(t_.v_scale, v_scale_, s.request, j, s.kv_head);
          for (std::int32_t i = 0; i < d_; ++i) {
            o[i] += pj * (read_kv(t_.v_cache, p_.value_dtype(), vb, i) * vs);
          }
        }
      }
    }
    if (s.kind == SegmentKind::direct) {
      write_output(s.request, s.kv_head, st);
      return;
    }
    if (slot_written_[static_cast<std::size_t>(s.slot)]++) {
      throw Error("plan", "writes slot " + std::to_string(s.slot) + " twice");
    }
    slots_[static_cast<std::size_t>(s.slot)] = std::move(st);
  }

  // The scale of a quantized cache's element (request, token, kv_head); 1 without scales.
  static double scale_of(const float* scales, const KvAddressing& at, std::int32_t request,
                         std::int64_t token, std::int32_t kv_head) {
    return scales == nullptr ? 1.0 : static_cast<double>(scales[at.row(request, token, kv_head)]);
  }

  void reduce(const Reduction& r) {
    const std::int32_t rows = p_.pair_rows(r.request);
    PairState acc(rows, d_);  // the empty state: merging into it is exact
    for (std::int32_t k = 0; k < r.num_slots; ++k) {
      const auto slot = static_cast<std::size_t>(r.slot_begin + k);
      if (!slot_written_[slot]) {
        throw Error("plan", "reads slot " + std::to_string(slot) + " that no segment writes");
      }
      for (std::int32_t row = 0; row < rows; ++row) {
        merge_into(acc.stats[static_cast<std::size_t>(row)],
                   &acc.o[static_cast<std::size_t>(row) * d_],
                   slots_[slot].stats[static_cast<std::size_t>(row)],
                   &slots_[slot].o[static_cast<std::size_t>(row) * d_], d_);
      }
    }
    write_output(r.request, r.kv_head, acc);
  }

  // Finalises every row of the pair (the sink joins here, once) and writes it.
  void write_output(std::int32_t request, std::int32_t kv_head, const PairState& st) {
    ++written_[static_cast<std::size_t>(request) * p_.kv_heads + kv_head];
    for (std::int32_t r = 0; r < p_.pair_rows(request); ++r) {
      const std::int32_t query = r / group_;
      const std::int32_t qh = kv_head * group_ + r % group_;
      const SoftmaxStats<double> stats = st.stats[static_cast<std::size_t>(r)];
      const Finalized<double> f =
          p_.variant.sinks ? finalize_with_sink<double>(stats, t_.sinks[qh]) : finalize(stats);
      const std::size_t row =
          static_cast<std::size_t>(p_.query_start(request) + query) * p_.q_heads + qh;
      for (std::int32_t i = 0; i < d_; ++i) {
        out_.out[row * d_ + i] = st.o[static_cast<std::size_t>(r) * d_ + i] * f.inv_l;
      }
      out_.lse[row] = f.lse;
    }
  }

  const DecodeProblem& p_;
  const Plan& plan_;
  const DecodeTensors& t_;
  std::int32_t group_, d_;  // d_: V's and the output's width
  std::int32_t dk_;         // Q's and K's
  KvAddressing k_{}, v_{}, k_scale_{}, v_scale_{};
  Output out_;
  std::vector<int> written_;
  std::vector<PairState> slots_;
  std::vector<char> slot_written_;
};

}  // namespace

Output interpret_plan(const DecodeProblem& problem, const Plan& plan,
                      const DecodeTensors& tensors) {
  validate(problem);
  validate(problem, tensors);
  check_plan_matches(plan, problem);
  check_plan(plan);
  return Interpreter(problem, plan, tensors).run();
}

}  // namespace leanattn::reference
