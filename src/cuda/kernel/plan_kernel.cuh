// The device planner: one CTA that writes the lean plan (head-major order) of a decode step into
// fixed-size device buffers from device-resident lengths, so that a step captured in a CUDA
// graph plans itself at every replay with no host work (issue 33; FlashMLA's
// get_mla_metadata and FA3's prepare_varlen_num_blocks are the same idea). Its answers come from
// common/lean_line.hpp, one thread per worker, and equal the host planner's plan image
// (make_plan + make_plan_image) for the same lengths. Phases, separated by barriers:
//   1. tiles[b] for every request (threads over requests);
//   2. before = exclusive scan of tiles (block scan);
//   3. per worker: its segment count, whether its range starts with a cut and whether it is the
//      pair's first cut;
//   4. worker_offsets, cuts_before, firsts_before (block scans);
//   5. per worker: its segments, and the reduction record of each split pair it starts;
//      thread 0 writes the totals.
// A length the host would refuse (negative, past max_seq_len - the captured caches' capacity - or
// between 1 and q_len - 1: the new tokens must fit) cannot be refused on the host, which never
// sees it: the planner then plans no work at all (every worker's range empty, the outputs left
// with the previous step's values) and writes the first such request + 1 to *refused. That word
// is sticky: only a refusal writes it and only the host clears it, when it checks
// (DevicePlannedStep::check), so a refused replay among several is still reported.
// Used by plan_kernel.cu (the CUDA build) and by the emulator (tools/cuda_emulator).
#pragma once

#include <cstdint>

#include "cuda/collective/ptx.cuh"
#include "cuda/common/lean_line.hpp"
#include "cuda/common/planner_params.hpp"

namespace leanattn::cuda {

inline constexpr int kPlannerWarps = kPlannerThreads / 32;
static_assert(kPlannerThreads % 32 == 0 && kPlannerWarps <= 32,
              "the scans take full warps, and warp 0 scans the warps' totals");

// out[i] = sum of in[0 .. i) for i <= n (n + 1 entries), by the CTA's kPlannerThreads threads:
// each sums a contiguous chunk, the chunk sums are scanned by shuffles within each warp and
// across the warps' totals (warp_sums: [kPlannerWarps] shared), then each writes its chunk's
// prefixes. Depth: 2 chunks + 5 + 3 shuffle steps (a serial pass over the 256 chunk sums
// before: 4 scans x 256 steps were 80-97 % of the planner's serial depth, planner_cost.cpp).
// Ends with a barrier.
template <class In, class Out>
__device__ void block_exclusive_scan(const In* in, Out* out, std::int64_t n, Out* warp_sums,
                                     int thread) {
  const std::int64_t per = (n + kPlannerThreads - 1) / kPlannerThreads;
  const std::int64_t b = thread * per < n ? thread * per : n;
  const std::int64_t e = b + per < n ? b + per : n;
  Out s = 0;
  for (std::int64_t i = b; i < e; ++i) s += static_cast<Out>(in[i]);
  const int lane = thread % 32, warp = thread / 32;
  Out inclusive = s;  // within the warp
  for (int d = 1; d < 32; d *= 2) {
    const Out y = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += y;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {  // the warps' totals, scanned (inclusive) by warp 0
    Out t = lane < kPlannerWarps ? warp_sums[lane] : 0;
    for (int d = 1; d < kPlannerWarps; d *= 2) {
      const Out y = __shfl_up_sync(0xffffffffu, t, d);
      if (lane >= d) t += y;
    }
    if (lane < kPlannerWarps) warp_sums[lane] = t;
  }
  __syncthreads();
  Out run = (warp == 0 ? 0 : warp_sums[warp - 1]) + inclusive - s;
  if (thread == kPlannerThreads - 1) out[n] = run + s;
  for (std::int64_t i = b; i < e; ++i) {
    const Out x = static_cast<Out>(in[i]);
    out[i] = run;
    run += x;
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kPlannerThreads, 1)
    lean_plan_kernel(const __grid_constant__ PlannerParams p) {
  __shared__ std::int64_t sums64[kPlannerWarps];
  __shared__ std::int32_t sums32[kPlannerWarps];
  constexpr int kNone = 0x7fffffff;
  __shared__ int refused;  // the first request + 1 with a length out of range, or kNone
  const int thread = static_cast<int>(threadIdx.x);
  // The decode kernel launched after this one as a programmatic dependent (DevicePlannedStep on
  // sm_90) may start its CTAs now: they wait in grid_dependency_wait() until this grid is done.
  ptx::launch_dependents();
  if (thread == 0) refused = kNone;
  __syncthreads();
  for (std::int32_t b = thread; b < p.batch; b += kPlannerThreads) {
    const std::int32_t len = p.seq_lens[b];
    const bool out_of_range = len < 0 || len > p.max_seq_len || (len != 0 && len < p.q_len);
    if (out_of_range) atomicMin(&refused, b + 1);
    p.tiles[b] = out_of_range ? 0 : LeanLine::tiles_of(len, p.q_len, p.window_left, p.tile_tokens);
  }
  __syncthreads();
  if (refused != kNone) {  // plan nothing
    for (std::int32_t w = thread; w <= p.workers; w += kPlannerThreads) p.worker_offsets[w] = 0;
    if (thread == 0) {
      p.totals[0] = p.totals[1] = p.totals[2] = p.totals[3] = 0;
      *p.refused = refused;
    }
    return;
  }
  block_exclusive_scan(p.tiles, p.before, p.batch, sums64, thread);
  const LeanLine line{p.seq_lens, p.tiles,       p.before, p.batch,      p.kv_heads,
                      p.workers,  p.tile_tokens, p.q_len,  p.window_left};
  for (std::int32_t w = thread; w < p.workers; w += kPlannerThreads) {
    const LeanLine::Run r = line.run(w);
    p.counts[w] = static_cast<std::int32_t>(r.end - r.first);
    const LeanLine::Cut c = line.cut_at(w);
    p.cuts[w] = c.cut ? 1 : 0;
    p.firsts[w] = c.first ? 1 : 0;
  }
  __syncthreads();
  block_exclusive_scan(p.counts, p.worker_offsets, p.workers, sums32, thread);
  block_exclusive_scan(p.cuts, p.cuts_before, p.workers, sums32, thread);
  block_exclusive_scan(p.firsts, p.firsts_before, p.workers, sums32, thread);
  for (std::int32_t w = thread; w < p.workers; w += kPlannerThreads) {
    const LeanLine::Run r = line.run(w);
    std::int32_t at = p.worker_offsets[w];
    for (std::int64_t pair = r.first; pair < r.end; ++pair, ++at) {
      const LeanLine::Piece pc = line.piece(w, pair, p.cuts_before, p.firsts_before);
      if (at >= 0 && at < p.max_segments) p.segments[at] = pc.segment;
      const std::int32_t k = pc.segment.reduction;
      if (pc.reduction.num_slots > 0 && k >= 0 && k < p.max_reductions) {
        p.reductions[k] = pc.reduction;
      }
    }
  }
  if (thread == 0) {
    const std::int32_t reductions = p.firsts_before[p.workers];
    p.totals[0] = p.worker_offsets[p.workers];
    p.totals[1] = reductions;
    p.totals[2] = p.cuts_before[p.workers] + reductions;
    p.totals[3] = static_cast<std::int32_t>(line.total());
  }
}

}  // namespace leanattn::cuda
