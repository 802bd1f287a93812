// emulate_kernel() (see kernel_emulator.hpp). Mirrors kernel/decode_kernel.cuh (the plan walk and
// the token pipeline), collective/warp_attention.cuh (one warp's steps, the variants' per-row
// rules) and collective/epilogue.cuh (warp-column merge, output or slot, last-arriver merge).
#include "kernel_emulator.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "cuda/common/kernel_params.hpp"
#include "cuda/common/kv_rows.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "cuda/common/row_rules.hpp"
#include "cuda/common/tile_math.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::cuda::testing {

namespace {

float load16(const void* base, DType t, std::int64_t i) {
  std::uint16_t h;
  std::memcpy(&h, static_cast<const std::byte*>(base) + i * 2, 2);
  return t == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
}

float round16(DType t, float x) {
  return t == DType::f16 ? round_to_f16(x) : round_to_bf16(x);
}

void store16(void* base, DType t, std::int64_t i, float x) {
  const std::uint16_t h = t == DType::f16 ? float_to_f16_bits(x) : float_to_bf16_bits(x);
  std::memcpy(static_cast<std::byte*>(base) + i * 2, &h, 2);
}

// One warp's registers: 16 rows of O, m, and the 4 lanes' partial sums of l per row.
struct WarpState {
  std::vector<float> o;  // [16][head_dim]
  float m[16];
  float lane_l[16][4];
  explicit WarpState(int d) : o(16 * static_cast<std::size_t>(d), 0.0f) {
    for (int r = 0; r < 16; ++r) {
      m[r] = empty_stats<float>().m;
      for (float& x : lane_l[r]) x = empty_stats<float>().l;
    }
  }
};

struct Emulator {
  const DecodeProblem& p;
  const Plan& plan;
  const DecodeTensors& t;
  int d, g, rows_per_pass, warps_m, warps_n, block_n, steps_per_warp;
  KvAddressing k, v;
  FastDivider page;
  int merge_capacity, merge_max_rows;
  float* slot_o;  // the workspace (workspace_pointers' arrays, or the emulator's own)
  float* slot_m;
  float* slot_l;
  std::uint32_t* counters;
  std::int64_t merges = 0;

  // warp_attention.cuh step(): rows of warp tile `wm`, tokens [t0, t0 + 16), `valid` of them in
  // the range; set_rows()' rules per row (row_rules.hpp), the keys a row does not see masked.
  void step(WarpState& w, const TokenRange& range, int request, int kv_head, int row_base,
            std::int64_t t0, int valid) const {
    const float scale = p.softmax_scale();
    const AttentionVariant& var = p.variant;
    const std::int64_t len = p.seq_lens[static_cast<std::size_t>(request)];
    for (int r = 0; r < 16; ++r) {
      const int row = row_base + r;
      const PairRow pr = pair_row(row < g ? row : 0, kv_head, p.group_size());
      const RowKeys keys =
          row < g ? row_keys(range, len, p.q_len, pr.token, var.causal, var.window_left)
                  : RowKeys{0, 0};
      const auto position = static_cast<std::int32_t>(query_position(len, p.q_len, pr.token));
      const float slope = var.alibi ? t.alibi_slopes[pr.head] : 0.0f;
      float s[16];
      for (int j = 0; j < 16; ++j) {
        const auto key = static_cast<std::int32_t>(t0 + j);
        if (!keys.sees(key)) {
          s[j] = softmax_detail::neg_inf<float>();
          continue;
        }
        float dot = 0.0f;
        const KvRowOffsets off = kv_row_offsets(k, v, page, request, key, kv_head);
        const std::int64_t qb = request * t.q_stride_batch + pr.token * t.q_stride_token +
                                static_cast<std::int64_t>(pr.head) * t.q_stride_head;
        for (int i = 0; i < d; ++i) {
          dot += load16(t.q, p.q_dtype, qb + i) * load16(t.k_cache, p.kv_dtype, off.k + i);
        }
        s[j] = variant_score(dot * scale, var.softcap, slope, key, position);
      }
      float block_max = softmax_detail::neg_inf<float>();
      for (float x : s) block_max = score_max(block_max, x);
      const RowStep st = row_step(w.m[r], block_max);
      float pw[16];
      for (int j = 0; j < 16; ++j) pw[j] = row_weight(s[j], st.shift);
      for (int lane = 0; lane < 4; ++lane) {  // columns 2 lane, 2 lane + 1, 8 + 2 lane, 9 + 2 lane
        float sum = 0.0f;
        for (int nt = 0; nt < 2; ++nt) {
          for (int j = 0; j < 2; ++j) sum += pw[nt * 8 + 2 * lane + j];
        }
        w.lane_l[r][lane] = w.lane_l[r][lane] * st.rescale + sum;
      }
      w.m[r] = st.m_new;
      float* o = w.o.data() + static_cast<std::size_t>(r) * d;
      for (int c = 0; c < d; ++c) o[c] *= st.rescale;
      for (int j = 0; j < valid; ++j) {
        const float pj = round16(p.kv_dtype, pw[j]);
        const KvRowOffsets off =
            kv_row_offsets(k, v, page, request, static_cast<std::int32_t>(t0 + j), kv_head);
        for (int c = 0; c < d; ++c) o[c] += pj * load16(t.v_cache, p.kv_dtype, off.v + c);
      }
    }
  }

  // epilogue.cuh write_output(): pair row `row`'s output and LSE, its sink joining here.
  void write_output(int request, int kv_head, int row, int quad, const MergedColumns& mc) const {
    const PairRow pr = pair_row(row, kv_head, p.group_size());
    const Finalized<float> f =
        p.variant.sinks ? finalize_with_sink(mc.stats, t.sinks[pr.head]) : finalize(mc.stats);
    const std::int64_t base = request * t.out_stride_batch + pr.token * t.out_stride_token +
                              pr.head * t.out_stride_head + 4 * quad;
    for (int i = 0; i < 4; ++i) store16(t.out, p.q_dtype, base + i, mc.o.v[i] * f.inv_l);
    if (quad == 0 && t.lse != nullptr) {
      t.lse[request * t.lse_stride_batch + pr.token * t.lse_stride_token + pr.head] = f.lse;
    }
  }

  struct ScratchSource {
    const std::vector<WarpState>* warps;  // the warp column states of one warp row
    const float* l;                       // [warps_n] quad-reduced l of the row
    int r, quad, d;
    SoftmaxStats<float> stats(int k) const {
      return {(*warps)[static_cast<std::size_t>(k)].m[r], l[k]};
    }
    Columns4 columns(int k) const {
      const float* o = (*warps)[static_cast<std::size_t>(k)].o.data() +
                       static_cast<std::size_t>(r) * d + 4 * quad;
      return {{o[0], o[1], o[2], o[3]}};
    }
  };

  struct SlotSource {
    const Emulator* e;
    int slot_begin, row, quad;
    std::size_t at(int k) const {
      return static_cast<std::size_t>(slot_begin + k) * e->g + static_cast<std::size_t>(row);
    }
    SoftmaxStats<float> stats(int k) const { return {e->slot_m[at(k)], e->slot_l[at(k)]}; }
    Columns4 columns(int k) const {
      const float* o = e->slot_o + at(k) * static_cast<std::size_t>(e->d) + 4 * quad;
      return {{o[0], o[1], o[2], o[3]}};
    }
  };

  // decode_kernel.cuh: one pass of rows [row0, row0 + rows_per_pass) over the segment.
  void pass(const DeviceSegment& seg, const TokenRange& range, int row0) {
    const int rows = std::min(rows_per_pass, g - row0);
    std::vector<std::vector<WarpState>> warps(
        static_cast<std::size_t>(warps_m),
        std::vector<WarpState>(static_cast<std::size_t>(warps_n), WarpState(d)));
    for (int b = 0; b < block_count(range, block_n); ++b) {
      const std::int64_t block_begin = range.begin + static_cast<std::int64_t>(b) * block_n;
      for (int wm = 0; wm < warps_m; ++wm) {
        if (wm * 16 >= rows) continue;  // inactive warp row
        for (int wn = 0; wn < warps_n; ++wn) {
          for (int s = 0; s < steps_per_warp; ++s) {
            const std::int64_t t0 = warp_step_begin(block_begin, wn, s, warps_n, 16);
            const int valid = step_valid_keys(t0, range, 16);
            if (valid == 0) break;
            step(warps[static_cast<std::size_t>(wm)][static_cast<std::size_t>(wn)], range,
                 seg.request, seg.kv_head, row0 + wm * 16, t0, valid);
          }
        }
      }
    }
    // epilogue.cuh: finish (quad reduction: xor 1, then xor 2), merge columns, write.
    for (int r = 0; r < rows; ++r) {
      const int wm = r / 16, wr = r % 16;
      std::vector<float> l(static_cast<std::size_t>(warps_n));
      for (int wn = 0; wn < warps_n; ++wn) {
        const float* ll =
            warps[static_cast<std::size_t>(wm)][static_cast<std::size_t>(wn)].lane_l[wr];
        l[static_cast<std::size_t>(wn)] = (ll[0] + ll[1]) + (ll[2] + ll[3]);
      }
      for (int quad = 0; quad < d / 4; ++quad) {
        const MergedColumns mc = merge_in_order(
            warps_n, ScratchSource{&warps[static_cast<std::size_t>(wm)], l.data(), wr, quad, d});
        const int row = row0 + r;
        if (seg.slot < 0) {
          write_output(seg.request, seg.kv_head, row, quad, mc);
          continue;
        }
        const std::size_t at =
            static_cast<std::size_t>(seg.slot) * g + static_cast<std::size_t>(row);
        std::copy(mc.o.v, mc.o.v + 4, slot_o + at * static_cast<std::size_t>(d) + 4 * quad);
        if (quad == 0) {
          slot_m[at] = mc.stats.m;
          slot_l[at] = mc.stats.l;
        }
      }
    }
  }

  // epilogue.cuh arrive() and merge_slots_parallel(): the same row chunks, lanes and order.
  void arrive(const DeviceSegment& seg) {
    const Reduction& r = plan.reductions[static_cast<std::size_t>(seg.reduction)];
    std::uint32_t& counter = counters[static_cast<std::size_t>(seg.reduction)];
    const bool last = ++counter == static_cast<std::uint32_t>(r.num_slots);
    if (!last) return;
    counter = 0;
    ++merges;
    const int quads = d / 4;
    for (int row0 = 0; row0 < g;) {
      const int chunk = merge_chunk_rows(r.num_slots, g - row0, merge_capacity, merge_max_rows);
      const int rows = chunk == 0 ? g : chunk;  // 0: the serial fallback, all rows
      const int lanes = merge_lanes((chunk == 0 ? 1 : rows) * quads, 128);
      for (int row = row0; row < row0 + rows; ++row) {
        for (int quad = 0; quad < quads; ++quad) {
          const MergedColumns mc =
              merge_slots(r.num_slots, lanes, SlotSource{this, r.slot_begin, row, quad});
          write_output(r.request, r.kv_head, row, quad, mc);
        }
      }
      row0 += rows;
    }
  }
};

}  // namespace

EmulationResult emulate_kernel(const DecodeProblem& problem, const Plan& plan,
                               const DecodeTensors& tensors, const KernelHandle& kernel,
                               std::span<const std::int32_t> arrival,
                               const WorkspacePointers* workspace) {
  const bool paged = problem.layout == KvLayout::paged;
  const auto addressing = [&](const KvStrides& s) { return kv_addressing(problem, tensors, s); };
  const int warps_n = 4 / kernel.warps_m;
  Emulator e{problem,
             plan,
             tensors,
             problem.head_dim,
             plan.group_size,
             kernel.rows,
             kernel.warps_m,
             warps_n,
             kernel.block_n,
             kernel.block_n / (16 * warps_n),
             addressing(tensors.k_strides),
             addressing(tensors.v_strides),
             FastDivider::make(static_cast<std::uint32_t>(paged ? problem.page_size : 1)),
             kernel.merge_capacity,
             kernel.merge_max_rows,
             nullptr,
             nullptr,
             nullptr,
             nullptr,
             0};
  const std::size_t slot_rows = static_cast<std::size_t>(plan.num_slots) * plan.group_size;
  std::vector<float> own_o, own_m, own_l;
  std::vector<std::uint32_t> own_counters;
  if (workspace != nullptr) {
    e.slot_o = workspace->slot_o;
    e.slot_m = workspace->slot_m;
    e.slot_l = workspace->slot_l;
    e.counters = workspace->counters;
  } else {
    own_o.assign(slot_rows * static_cast<std::size_t>(problem.head_dim),
                 std::numeric_limits<float>::quiet_NaN());
    own_m.assign(slot_rows, std::numeric_limits<float>::quiet_NaN());
    own_l.assign(slot_rows, std::numeric_limits<float>::quiet_NaN());
    own_counters.assign(plan.reductions.size(), 0);
    e.slot_o = own_o.data();
    e.slot_m = own_m.data();
    e.slot_l = own_l.data();
    e.counters = own_counters.data();
  }

  for (std::int32_t w : arrival) {
    for (const Segment& s : plan.worker_segments(w)) {
      const bool split = s.kind != SegmentKind::direct;
      const KeyRange keys = plan.tile_keys(s.request, s.tile_begin, s.tile_end);
      const TokenRange range{keys.begin, keys.end};
      const DeviceSegment seg{s.request,
                              s.kv_head,
                              static_cast<std::int32_t>(range.begin),
                              static_cast<std::int32_t>(range.end),
                              split ? s.slot : -1,
                              split ? s.reduction : -1};
      for (int row0 = 0; row0 < e.g; row0 += e.rows_per_pass) e.pass(seg, range, row0);
      if (seg.slot >= 0) e.arrive(seg);
    }
  }
  return {e.merges, std::vector<std::uint32_t>(e.counters, e.counters + plan.reductions.size())};
}

}  // namespace leanattn::cuda::testing
