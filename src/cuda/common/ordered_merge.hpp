// The decode kernel's softmax-state arithmetic on top of the shared state header
// (core/softmax_state.hpp): the per-row step of the online softmax, and the fixed-order merge of
// several states of one row (the warp columns of a CTA, then the workspace slots of a split pair).
// Host/device: the kernel calls these on shared and global memory, the CPU emulation
// (tests/cuda/kernel_emulation_test.cpp) on host arrays. The slot merge's fixed order is written
// out once here (merge_slots) for the emulator and the kernel's fallback; the kernel's parallel
// merge (collective/epilogue.cuh) computes the same sums in the same order.
#pragma once

#include "leanattn/core/host_device.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::cuda {

// One online-softmax step of a row: the new max, the shift the block's scores are
// exponentiated against (exp_shift: 0 while every score is -inf) and the factor the old state is
// rescaled by (rescale_factor: 0 for an empty old state, never NaN).
struct RowStep {
  float m_new;
  float shift;
  float rescale;
};

LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE RowStep row_step(float m_old, float block_max) {
  const float m_new = block_max > m_old ? block_max : m_old;
  return {m_new, exp_shift(m_new), rescale_factor(m_old, m_new)};
}

// exp(score - shift) of one score, the state header's exponential.
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float row_weight(float score, float shift) {
  return softmax_detail::exp_of(score - shift);
}

// Max as the state header takes it (a NaN score does not become the max; it reaches l instead).
LEANATTN_HOST_DEVICE LEANATTN_FORCEINLINE float score_max(float a, float b) {
  return b > a ? b : a;
}

// Four consecutive output columns of one row.
struct Columns4 {
  float v[4];
};

struct MergedColumns {
  SoftmaxStats<float> stats;
  Columns4 o;
};

// Merges states 0, 1, ..., count - 1 of one row, in that order, starting from the empty state.
// `source` gives stats(k) -> SoftmaxStats<float> and columns(k) -> Columns4 (its unnormalised
// output columns). The order is fixed, so the result does not depend on which CTA finished first.
template <class Source>
LEANATTN_HOST_DEVICE MergedColumns merge_in_order(int count, const Source& source) {
  MergedColumns acc{empty_stats<float>(), {{0.0f, 0.0f, 0.0f, 0.0f}}};
  for (int k = 0; k < count; ++k) {
    const MergeWeights<float> w = merge_weights(acc.stats, source.stats(k));
    const Columns4 x = source.columns(k);
    for (int i = 0; i < 4; ++i) acc.o.v[i] = w.scale_a * acc.o.v[i] + w.scale_b * x.v[i];
    acc.stats = w.merged;
  }
  return acc;
}

// The last arriver's merge of a split pair's slots, in parallel but in a fixed order. For each row
// the slots' maxima give M = max_k m_k (exact in any order) and the weights w_k = exp(m_k -
// exp_shift(M)) (0 for empty slots), computed once; then
//   l = sum_k w_k l_k                      (k ascending)
//   o = sum_{j < lanes} (sum_{k = j mod lanes, ascending} w_k o_k)   (lanes in order)
// where the slots of a row are spread over `lanes` threads. `lanes` depends only on the shape
// (merge_lanes), never on arrival, so the result is bitwise deterministic.

// Rows of the group merged at once: as many as the shared-memory arrays hold (capacity slots x
// rows), at most max_rows; 0 when even one row's slots do not fit (the serial fallback).
LEANATTN_HOST_DEVICE constexpr int merge_chunk_rows(int slots, int rows_left, int capacity,
                                                    int max_rows) {
  if (slots > capacity) return 0;
  int r = capacity / slots;
  if (r > max_rows) r = max_rows;
  return r < rows_left ? r : rows_left;
}

// Threads per output item (4 columns of a row) sharing out a row's slots: the largest power of
// two with items x lanes <= threads (1 when there are more items than threads).
LEANATTN_HOST_DEVICE constexpr int merge_lanes(int items, int threads) {
  int lanes = 1;
  while (2 * lanes * items <= threads) lanes *= 2;
  return lanes;
}

// The merge above for one row and 4 columns; `source` as for merge_in_order.
template <class Source>
LEANATTN_HOST_DEVICE MergedColumns merge_slots(int count, int lanes, const Source& source) {
  float m = empty_stats<float>().m;
  for (int k = 0; k < count; ++k) m = score_max(m, source.stats(k).m);
  const float shift = exp_shift(m);
  float l = 0.0f;
  for (int k = 0; k < count; ++k) {
    const SoftmaxStats<float> st = source.stats(k);
    l += row_weight(st.m, shift) * st.l;
  }
  Columns4 o{{0.0f, 0.0f, 0.0f, 0.0f}};
  for (int j = 0; j < lanes; ++j) {
    Columns4 part{{0.0f, 0.0f, 0.0f, 0.0f}};
    for (int k = j; k < count; k += lanes) {
      const float w = row_weight(source.stats(k).m, shift);
      const Columns4 x = source.columns(k);
      for (int i = 0; i < 4; ++i) part.v[i] += w * x.v[i];
    }
    for (int i = 0; i < 4; ++i) o.v[i] += part.v[i];
  }
  return {{m, l}, o};
}

}  // namespace leanattn::cuda
