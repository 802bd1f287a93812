// The end of a segment in the decode kernel:
//   stash():      every warp puts its state (O of its 16 rows and its columns of V; m and l,
//                 the same in every warp of a warp row and warp column, once) in shared memory;
//   write_rows(): the CTA merges the warp columns' states row by row in column order (the state
//                 header's merge rule, common/ordered_merge.hpp) and writes either the output
//                 rows (direct segment: O / l in Q's dtype, and LSE; a sink joins here) or its
//                 workspace slot;
//   arrive():     for a split pair, the last-arriver merge. Each CTA that wrote a slot makes it
//                 visible (__threadfence by every writer, then a barrier) and takes a ticket
//                 (atom.add.acq_rel.gpu on the reduction's counter). The CTA that brings the
//                 count to num_slots resets the counter to 0 for the next launch, and merges all
//                 slots with L1-bypassing loads, in parallel over its threads but in a fixed
//                 order (merge_slots_parallel; ordered_merge.hpp's merge_slots). No CTA ever waits
//                 for another, so any grid size and any residency is deadlock-free, and the output
//                 does not depend on which CTA finished last.
// Used by kernel/decode_kernel.cuh.
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/collective/warp_attention.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/mma_layout.hpp"
#include "cuda/common/ordered_merge.hpp"
#include "cuda/common/row_rules.hpp"
#include "leanattn/core/softmax_state.hpp"

namespace leanattn::cuda {

template <class T, class Shape>
struct Epilogue {
  static constexpr int kQuads = Shape::kHeadDimV / 4;  // groups of 4 output columns per row

  __device__ static float* scratch_o(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchOOffset);
  }
  __device__ static float* scratch_m(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchMOffset);
  }
  __device__ static float* scratch_l(unsigned char* smem) {
    return reinterpret_cast<float*>(smem + Shape::kScratchLOffset);
  }

  // Warp (warp_m, warp_v, warp_n)'s rows go to scratch row warp_m * 16 + r of column warp_n,
  // its output columns from warp_v * kVCols.
  __device__ static void stash(const WarpAttention<T, Shape>& w, unsigned char* smem, int warp_m,
                               int warp_v, int warp_n, int lane) {
    float* o = scratch_o(smem) + (warp_n * Shape::kRows + warp_m * 16) * Shape::kScratchRowFloats +
               warp_v * Shape::kVCols;
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
    if (lane % 4 == 0 && warp_v == 0) {
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
          reinterpret_cast<const float4*>(p->slot_o + index(k) * Shape::kHeadDimV + 4 * quad));
      return {{x.x, x.y, x.z, x.w}};
    }
  };

  // Output of pair row `row` of (request, kv_head) (its query token and head: pair_row; rq: the
  // request's queries and where they live), columns [4 q, 4 q + 4): o / l in T, and the LSE once
  // per row. A row's sink joins here, once, where the row is finalised (variant_rules.hpp:
  // finalize_with_sink); partial states never see it.
  __device__ static void write_output(const KernelParams& p, const RequestQueries& rq, int kv_head,
                                      int row, int quad, const MergedColumns& mc) {
    const PairRow pr = pair_row(row, kv_head, p.heads);
    const Finalized<float> f =
        p.sinks != nullptr ? finalize_with_sink(mc.stats, p.sinks[pr.head]) : finalize(mc.stats);
    const std::int64_t token = static_cast<std::int64_t>(rq.token) + pr.token;
    T* out = static_cast<T*>(p.out) + rq.batch * p.out_stride_batch + token * p.out_stride_token +
             pr.head * p.out_stride_head + 4 * quad;
    const uint2 packed = make_uint2(ptx::pack2<T>(mc.o.v[0] * f.inv_l, mc.o.v[1] * f.inv_l),
                                    ptx::pack2<T>(mc.o.v[2] * f.inv_l, mc.o.v[3] * f.inv_l));
    *reinterpret_cast<uint2*>(out) = packed;
    if (quad == 0 && p.lse != nullptr) {
      p.lse[rq.batch * p.lse_stride_batch + token * p.lse_stride_token + pr.head] = f.lse;
    }
  }

  // Rows [row0, row0 + rows) of the pair: merge the warp columns, write output or slot (slots
  // keep group_size rows each; a request's own rows are its first).
  __device__ static void write_rows(const unsigned char* smem, const KernelParams& p,
                                    const DeviceSegment& seg, int row0, int rows, int thread) {
    const RequestQueries rq = request_queries(p, seg.request);
    for (int i = thread; i < rows * kQuads; i += Shape::kThreads) {
      const int r = i / kQuads;
      const int quad = i % kQuads;
      const MergedColumns mc = merge_in_order(Shape::kWarpsN, ScratchSource{smem, r, quad});
      const int row = row0 + r;
      if (seg.slot < 0) {
        write_output(p, rq, seg.kv_head, row, quad, mc);
        continue;
      }
      const std::int64_t at = static_cast<std::int64_t>(seg.slot) * p.group_size + row;
      *reinterpret_cast<float4*>(p.slot_o + at * Shape::kHeadDimV + 4 * quad) =
          make_float4(mc.o.v[0], mc.o.v[1], mc.o.v[2], mc.o.v[3]);
      if (quad == 0) {
        p.slot_m[at] = mc.stats.m;
        p.slot_l[at] = mc.stats.l;
      }
    }
  }

  // After every row of a split segment's slot is written: take a ticket; the last arriver merges.
  // `flag` is a shared-memory word of the CTA.
  __device__ static void arrive(const KernelParams& p, const DeviceSegment& seg,
                                unsigned char* smem, int* flag, int thread) {
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
    const std::uint64_t t0 = p.trace != nullptr && thread == 0 ? ptx::global_timer_ns() : 0;
    merge_slots_parallel(p, p.reductions[seg.reduction], smem, thread);
    if (p.trace != nullptr && thread == 0) {
      p.trace[blockIdx.x * kTraceWords + 3] += ptx::global_timer_ns() - t0;
    }
  }

  // The last arriver's merge (ordered_merge.hpp: merge_slots gives the order), rows in chunks
  // that fit shared memory. Per chunk: (1) every thread loads some of the slots' m and l (all
  // loads independent); (2) one thread per row takes the max, (3) all threads turn m into
  // weights, (4) one thread per row sums l; (5) each output item (4 columns of a row) gets
  // `lanes` threads, each summing the weighted slots k = lane mod lanes with several loads in
  // flight; (6) the lanes' sums are added in lane order and the row is written. Ends with a
  // barrier: the next segment's copies reuse the shared memory.
  __device__ static void merge_slots_parallel(const KernelParams& p, const DeviceReduction& r,
                                              unsigned char* smem, int thread) {
    const int n = r.num_slots;
    const int g = p.group_size;  // a slot's rows (its row stride)
    const RequestQueries rq = request_queries(p, r.request);
    const int pair_rows = rq.rows;  // the rows to merge: the request's own
    float* w = reinterpret_cast<float*>(smem + Shape::kMergeWOffset);
    float* sl = reinterpret_cast<float*>(smem + Shape::kMergeLOffset);
    float* row_m = reinterpret_cast<float*>(smem + Shape::kMergeRowMOffset);
    float* row_l = reinterpret_cast<float*>(smem + Shape::kMergeRowLOffset);
    float4* part = reinterpret_cast<float4*>(smem + Shape::kMergePartOffset);
    if (merge_chunk_rows(n, g, Shape::kMergeCapacity, Shape::kMergeMaxRows) == 0) {
      // More slots than shared memory holds (thousands of pieces of one pair): same order, serial.
      for (int i = thread; i < pair_rows * kQuads; i += Shape::kThreads) {
        const int row = i / kQuads;
        const int quad = i % kQuads;
        const MergedColumns mc = merge_slots(n, merge_lanes(kQuads, Shape::kThreads),
                                             SlotSource{&p, r.slot_begin, row, quad});
        write_output(p, rq, r.kv_head, row, quad, mc);
      }
      __syncthreads();
      return;
    }
    for (int row0 = 0; row0 < pair_rows;) {
      const int rows =
          merge_chunk_rows(n, pair_rows - row0, Shape::kMergeCapacity, Shape::kMergeMaxRows);
      const int elems = n * rows;  // [slot][row]: slot k's rows are contiguous in the workspace
#pragma unroll 4
      for (int e = thread; e < elems; e += Shape::kThreads) {
        const int k = e / rows;
        const std::int64_t at =
            static_cast<std::int64_t>(r.slot_begin + k) * g + row0 + (e - k * rows);
        w[e] = __ldcg(p.slot_m + at);
        sl[e] = __ldcg(p.slot_l + at);
      }
      __syncthreads();
      for (int rr = thread; rr < rows; rr += Shape::kThreads) {
        float m = empty_stats<float>().m;
        for (int k = 0; k < n; ++k) m = score_max(m, w[k * rows + rr]);
        row_m[rr] = m;
      }
      __syncthreads();
      for (int e = thread; e < elems; e += Shape::kThreads) {
        w[e] = row_weight(w[e], exp_shift(row_m[e % rows]));
      }
      __syncthreads();
      for (int rr = thread; rr < rows; rr += Shape::kThreads) {
        float l = 0.0f;
        for (int k = 0; k < n; ++k) l += w[k * rows + rr] * sl[k * rows + rr];
        row_l[rr] = l;
      }
      __syncthreads();
      const int items = rows * kQuads;
      const int lanes = merge_lanes(items, Shape::kThreads);
      for (int it = thread; it < items * lanes; it += Shape::kThreads) {
        const int item = it % items;
        const int lane = it / items;
        const int rr = item / kQuads;
        const int quad = item % kQuads;
        const float* o =
            p.slot_o +
            (static_cast<std::int64_t>(r.slot_begin) * g + row0 + rr) * Shape::kHeadDimV + 4 * quad;
        const std::int64_t slot_stride = static_cast<std::int64_t>(g) * Shape::kHeadDimV;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
        for (int k = lane; k < n; k += lanes) {
          const float4 x = __ldcg(reinterpret_cast<const float4*>(o + k * slot_stride));
          const float wk = w[k * rows + rr];
          acc.x += wk * x.x;
          acc.y += wk * x.y;
          acc.z += wk * x.z;
          acc.w += wk * x.w;
        }
        if (lanes == 1) {
          write_output(p, rq, r.kv_head, row0 + rr, quad,
                       {{row_m[rr], row_l[rr]}, {{acc.x, acc.y, acc.z, acc.w}}});
        } else {
          part[it] = acc;
        }
      }
      if (lanes > 1) {
        __syncthreads();
        for (int item = thread; item < items; item += Shape::kThreads) {
          float4 o = part[item];
          for (int j = 1; j < lanes; ++j) {
            const float4 x = part[j * items + item];
            o.x += x.x;
            o.y += x.y;
            o.z += x.z;
            o.w += x.w;
          }
          const int rr = item / kQuads;
          write_output(p, rq, r.kv_head, row0 + rr, item % kQuads,
                       {{row_m[rr], row_l[rr]}, {{o.x, o.y, o.z, o.w}}});
        }
      }
      __syncthreads();  // the arrays are refilled by the next chunk or the next segment
      row0 += rows;
    }
  }
};

}  // namespace leanattn::cuda
