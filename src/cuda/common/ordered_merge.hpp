// The decode kernel's softmax-state arithmetic on top of the shared state header
// (core/softmax_state.hpp): the per-row step of the online softmax, and the fixed-order merge of
// several states of one row (the warp columns of a CTA, then the workspace slots of a split pair).
// Host/device: the kernel calls these on shared and global memory, the CPU emulation
// (tests/cuda/kernel_emulation_test.cpp) on host arrays.
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

}  // namespace leanattn::cuda
