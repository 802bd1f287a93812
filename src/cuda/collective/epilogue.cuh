// The end of a segment in the decode kernel:
//   stash():      every warp puts its state (O, m, l of its 16 rows) in shared memory;
//   write_rows(): the CTA merges the warp columns' states row by row in column order (the state
//                 header's merge rule, common/ordered_merge.hpp) and writes either the output
//                 rows (direct segment: O / l in Q's dtype, and LSE) or its workspace slot;
//   arrive():     for a split pair, the last-arriver merge. Each CTA that wrote a slot makes it
//                 visible (__threadfence by every writer, then a barrier) and takes a ticket
//                 (atom.add.acq_rel.gpu on the reduction's counter). The CTA that brings the
//                 count to num_slots resets the counter to 0 for the next launch, and merges all
//                 slots in slot order (= tile order) with L1-bypassing loads. No CTA ever waits for
//                 another, so any grid size and any residency is deadlock-free, and the output
//                 does not depend on which CTA finished last.
// Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/collective/warp_attention.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/mma_layout.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct Epilogue {
  static constexpr int kQuads = Shape::kHeadDim / 4;  // groups of 4 columns per row

  __device__ static float* scratch_o(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchOOffset);
  }
  __device__ static float* scratch_m(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchMOffset);
  }
  __device__ static float* scratch_l(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchLOffset);
  }

  // Warp (warp_m, warp_n)'s rows go to scratch row warp_m * 16 + r of column warp_n.
  __device__ static void stash(const WarpAttention<T, Shape>& w, unsigned char* smem, int warp_m,
                               int warp_n, int lane) {
    float* o = scratch_o(smem) + (warp_n * Shape::kRows + warp_m * 16) * Shape::kScratchRowFloats;
#pragma unroll
    for (int dt = 0; dt < Shape::kDimTiles; ++dt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = acc_row(lane, 2 * h);
        const int col = dt * 8 + acc_col(lane, 0);
        *reinterpret_cast<float2*>(o + row * Shape::kScratchRowFloats + col) =
            make_float2(w.o[dt][2 * h], w.o[dt][2 * h + 1]);
      }
    }
    if (lane % 4 == 0) {
      const int base = warp_n * Shape::kRows + warp_m * 16;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        scratch_m(smem)[base + acc_row(lane, 2 * i)] = w.m[i];
        scratch_l(smem)[base + acc_row(lane, 2 * i)] = w.l[i];
      }
    }
  }

  // The warp columns' states of scratch row `row`, columns [4 q, 4 q + 4).
  struct ScratchSource {
    const unsigned char* smem;
    int row;
    int quad;
    __device__ SoftmaxStats<float> stats(int k) const {
      const int i = k * Shape::kRows + row;
      return {reinterpret_cast<const float*>(smem + Shape::kScratchMOffset)[i],
              reinterpret_cast<const float*>(smem + Shape::kScratchLOffset)[i]};
    }
    __device__ Columns4 columns(int k) const {
      const float4 x = *reinterpret_cast<const float4*>(
          reinterpret_cast<const float*>(smem + Shape::kScratchOOffset) +
          (k * Shape::kRows + row) * Shape::kScratchRowFloats + 4 * quad);
      return {{x.x, x.y, x.z, x.w}};
    }
  };

  // Workspace slots [slot_begin, slot_begin + count) of group row `row`, read through L2 only
  // (other CTAs wrote them).
  struct SlotSource {
    const KernelParams* p;
    int slot_begin;
    int row;
    int quad;
    __device__ std::int64_t index(int k) const {
      return static_cast<std::int64_t>(slot_begin + k) * p->group_size + row;
    }
    __device__ SoftmaxStats<float> stats(int k) const {
      return {__ldcg(p->slot_m + index(k)), __ldcg(p->slot_l + index(k))};
    }
    __device__ Columns4 columns(int k) const {
      const float4 x = __ldcg(
          reinterpret_cast<const float4*>(p->slot_o + index(k) * Shape::kHeadDim + 4 * quad));
      return {{x.x, x.y, x.z, x.w}};
    }
  };

  // Output row q_head of `request`, columns [4 q, 4 q + 4): o / l in T, and the LSE once per row.
  __device__ static void write_output(const KernelParams& p, int request, int q_head, int quad,
                                      const MergedColumns& mc) {
    const Finalized<float> f = finalize(mc.stats);
    T* out = static_cast<T*>(p.out) + request * p.out_stride_batch + q_head * p.out_stride_head +
             4 * quad;
    const uint2 packed = make_uint2(ptx::pack2<T>(mc.o.v[0] * f.inv_l, mc.o.v[1] * f.inv_l),
                                    ptx::pack2<T>(mc.o.v[2] * f.inv_l, mc.o.v[3] * f.inv_l));
    *reinterpret_cast<uint2*>(out) = packed;
    if (quad == 0 && p.lse != nullptr) p.lse[request * p.lse_stride_batch + q_head] = f.lse;
  }

  // Rows [row0, row0 + rows) of the group: merge the warp columns, write output or slot.
  __device__ static void write_rows(const unsigned char* smem, const KernelParams& p,
                                    const DeviceSegment& seg, int row0, int rows, int thread) {
    for (int i = thread; i < rows * kQuads; i += Shape::kThreads) {
      const int r = i / kQuads;
      const int quad = i % kQuads;
      const MergedColumns mc = merge_in_order(Shape::kWarpsN, ScratchSource{smem, r, quad});
      const int row = row0 + r;
      if (seg.slot < 0) {
        write_output(p, seg.request, seg.kv_head * p.group_size + row, quad, mc);
        continue;
      }
      const std::int64_t at = static_cast<std::int64_t>(seg.slot) * p.group_size + row;
      *reinterpret_cast<float4*>(p.slot_o + at * Shape::kHeadDim + 4 * quad) =
          make_float4(mc.o.v[0], mc.o.v[1], mc.o.v[2], mc.o.v[3]);
      if (quad == 0) {
        p.slot_m[at] = mc.stats.m;
        p.slot_l[at] = mc.stats.l;
      }
    }
  }

  // After every row of a split segment's slot is written: take a ticket; the last arriver merges.
  // `flag` is a shared-memory word of the CTA.
  __device__ static void arrive(const KernelParams& p, const DeviceSegment& seg, int* flag,
                                int thread) {
    __threadfence();  // this thread's slot stores, visible at gpu scope before the ticket
    __syncthreads();
    if (thread == 0) {
      const int needed = p.reductions[seg.reduction].num_slots;
      std::uint32_t* counter = p.counters + seg.reduction;
      const bool last = ptx::arrive(counter) + 1 == static_cast<std::uint32_t>(needed);
      if (last) ptx::reset(counter);  // every other piece has arrived: nobody touches it again
      *flag = last ? 1 : 0;
    }
    __syncthreads();
    const bool last = *flag != 0;
    __syncthreads();  // flag read by all before thread 0 may write it again
    if (!last) return;
    __threadfence();
    const DeviceReduction r = p.reductions[seg.reduction];
    for (int i = thread; i < p.group_size * kQuads; i += Shape::kThreads) {
      const int row = i / kQuads;
      const int quad = i % kQuads;
      const MergedColumns mc = merge_in_order(r.num_slots, SlotSource{&p, r.slot_begin, row, quad});
      write_output(p, r.request, r.kv_head * p.group_size + row, quad, mc);
    }
  }
};

}  // namespace leanattn::cuda
