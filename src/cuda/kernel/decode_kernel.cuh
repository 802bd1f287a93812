// The persistent decode kernel: CTA w runs worker w's segments of the plan, in order. For each
// segment (one (request, KV head) pair and a range of its lean tiles) and each pass of up to
// kRows of the pair's rows (the request's query tokens - q_len, or its query_start_loc count -
// x the GQA group, common/row_rules.hpp: request_queries, pair_row):
//   1. Q rows and the first K/V stages go into shared memory (cp.async, 16-byte, swizzled); the
//      segment's token range comes precomputed in the plan (no seq_len lookup before the copies);
//   2. a kStages-deep pipeline streams the segment's tokens in blocks of kBlockN: while the warps
//      compute block b, the copies of blocks b + 1 .. b + kStages - 1 are in flight (an 8-bit
//      cache: its stages land at 8 bits with their tokens' scales, and the CTA converts block b
//      into 16-bit K and V tiles before the warps read it: collective/kv8_convert.cuh);
//   3. each warp runs its 16-token steps of the block (collective/warp_attention.cuh), masking
//      per row the keys its query does not see (causal rows, windows) and applying the soft-cap
//      and ALiBi; with V's columns split over warps (WarpsV > 1, a 512-wide V), the warps of a
//      warp row run the same steps, each for its own output columns; V read from K's tile where
//      the configuration says so (VFromK: absorbed MLA's latent cache, copied once);
//   4. the epilogue merges the warps' states and writes the output rows or the workspace slot
//      (collective/epilogue.cuh; a row's sink joins there, where its output is written); a split
//      pair's last piece to arrive merges all its slots.
// One launch = one plan; the lean, split and head strategies are only different plans.
// Instantiated once per row of the configuration table (src/cuda/kernel_configs.cmake).
#pragma once

#include <cstdint>

#include "cuda/collective/epilogue.cuh"
#include "cuda/collective/kv8_convert.cuh"
#include "cuda/collective/ptx.cuh"
#include "cuda/collective/tile_loader.cuh"
#include "cuda/collective/warp_attention.cuh"
#include "cuda/common/kernel_params.hpp"
#include "cuda/common/tile_math.hpp"

namespace leanattn::cuda {

// The token pipeline of one pass: rows [row0, row0 + kRows) of the pair over `range`.
// Returns with every copy landed and a barrier passed (the stages may be reused).
template <class T, class Shape>
__device__ __forceinline__ void attend_range(WarpAttention<T, Shape>& acc, unsigned char* smem,
                                             const KernelParams& p, const DeviceSegment& seg,
                                             TokenRange range, int row0, bool warp_active,
                                             int warp_m, int warp_v, int warp_n, int lane,
                                             int thread) {
  using Loader = TileLoader<T, Shape>;
  using KvT = typename Loader::KvT;
  constexpr int kStageElems = Shape::kBlockN * Shape::kHeadDim;
  constexpr int kVStageElems = Shape::kBlockN * Shape::kHeadDimV;  // (unused with VFromK)
  constexpr int kStageScales = Shape::kKv8 ? 2 * Shape::kBlockN : 0;
  T* q_tile = reinterpret_cast<T*>(smem + Shape::kQOffset);
  T* k_tiles = reinterpret_cast<T*>(smem + Shape::kKOffset);
  T* v_tiles = reinterpret_cast<T*>(smem + Shape::kVOffset);
  KvT* k_loads = reinterpret_cast<KvT*>(smem + Shape::kLoadKOffset);  // 16-bit: = k_tiles
  KvT* v_loads = reinterpret_cast<KvT*>(smem + Shape::kLoadVOffset);
  float* scales = reinterpret_cast<float*>(smem + Shape::kScalesOffset);  // 8-bit only
  const std::uint32_t q_addr = ptx::smem_address(q_tile);
  const std::uint32_t k_addr = ptx::smem_address(k_tiles);
  const std::uint32_t v_addr = ptx::smem_address(v_tiles);
  const int blocks = block_count(range, Shape::kBlockN);
  // The copies of block `block` into its stage (block % kStages).
  auto load_block = [&](int block) {
    const int st = block % Shape::kStages;
    Loader::load_kv(k_loads + st * kStageElems, v_loads + st * kVStageElems,
                    scales + st * kStageScales, p, seg.request, seg.kv_head,
                    range.begin + static_cast<std::int64_t>(block) * Shape::kBlockN, range, thread);
  };

  // Prologue: Q with the first stage, then the other stages but one (one commit group each,
  // empty groups included, so that group b always holds block b).
  // The request's queries, read here and in the epilogue rather than kept in registers across
  // the token loop.
  const RequestQueries rq = request_queries(p, seg.request);
  Loader::load_q(q_tile, p, rq, seg.kv_head, row0, thread);
#pragma unroll
  for (int st = 0; st < Shape::kStages - 1; ++st) {
    if (st < blocks) load_block(st);
    ptx::cp_async_commit();
  }
  // The pass's row rules, while the first copies are in flight (seq_len: one load); every step
  // reads them after the first block's barrier below.
  RowRule* rules = reinterpret_cast<RowRule*>(smem + Shape::kRowRulesOffset);
  if (thread < Shape::kRows) {
    rules[thread] = row_rule(p, rq, seg.kv_head, range, p.seq_lens[seg.request], row0 + thread);
  }

  for (int b = 0; b < blocks; ++b) {
    ptx::cp_async_wait<Shape::kStages - 2>();  // block b (and Q) landed for this thread
    __syncthreads();                           // ... for every thread; stage b - 1 is free
    if (b == 0) {
      if (warp_active) acc.load_q(q_addr, warp_m, lane);
      // Q overlays V's last tile, which the copies (or the conversion) below may now overwrite:
      // every warp must have its Q fragments first (once per pass).
      if constexpr (Shape::kQOverlaysStage) __syncthreads();
    }
    const int next = b + Shape::kStages - 1;
    if (next < blocks) load_block(next);
    ptx::cp_async_commit();

    const int st = b % Shape::kStages;
    const float* k_scales = nullptr;  // 8-bit: block b's K scales [kBlockN]
    if constexpr (Shape::kKv8) {
      Kv8Converter<T, Shape>::convert(k_tiles, v_tiles, k_loads + st * kStageElems,
                                      v_loads + st * kVStageElems, scales + st * kStageScales, p,
                                      thread);
      k_scales = scales + st * kStageScales;
      __syncthreads();  // the 16-bit tiles are complete (the next conversion waits for the top
                        // barrier: every warp is done with them)
    }
    if (warp_active) {
      const std::int64_t block_begin = range.begin + static_cast<std::int64_t>(b) * Shape::kBlockN;
      const int tile = Shape::kKv8 ? 0 : st;
      const std::uint32_t k_stage = k_addr + 2u * tile * kStageElems;
      const std::uint32_t v_stage = Shape::kVFromK ? k_stage : v_addr + 2u * tile * kVStageElems;
#pragma unroll 1
      for (int step = 0; step < Shape::kStepsPerWarp; ++step) {
        const std::int64_t token0 =
            warp_step_begin(block_begin, warp_n, step, Shape::kWarpsN, Shape::kStepTokens);
        if (step_valid_keys(token0, range, Shape::kStepTokens) == 0) break;  // past the range
        acc.step(q_addr, k_stage, v_stage, static_cast<int>(token0 - block_begin),
                 static_cast<std::int32_t>(token0), rules, k_scales, p, warp_m,
                 warp_v * Shape::kVCols, lane);
      }
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();
}

template <class T, class Shape>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocksPerSm)
    decode_kernel(const __grid_constant__ KernelParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int last_flag;
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread / 32;
  const int lane = thread % 32;
  // Warp (warp_m, warp_v, warp_n): its 16 rows, its share of V's columns, its token steps.
  const int warp_n = warp % Shape::kWarpsN;
  const int warp_v = (warp / Shape::kWarpsN) % Shape::kWarpsV;
  const int warp_m = warp / (Shape::kWarpsN * Shape::kWarpsV);

  if (p.trace != nullptr && thread == 0) {
    p.trace[blockIdx.x * kTraceWords] = ptx::sm_id();
    p.trace[blockIdx.x * kTraceWords + 1] = ptx::global_timer_ns();
    p.trace[blockIdx.x * kTraceWords + 3] = 0;
  }
  // Launched as the device planner's programmatic dependent, this CTA may have started while the
  // planner still writes the plan it reads next: wait for it (at once in any other launch; the
  // trace above, which a dependent launch never has, timed the CTA's start).
  ptx::grid_dependency_wait();
  const int first = p.worker_offsets[blockIdx.x];
  const int last = p.worker_offsets[blockIdx.x + 1];
  for (int s = first; s < last; ++s) {
    const DeviceSegment seg = p.segments[s];
    const TokenRange range{seg.token_begin, seg.token_end};      // precomputed by the host
    const int pair_rows = request_queries(p, seg.request).rows;  // 0: nothing to write
    for (int row0 = 0; row0 < pair_rows; row0 += Shape::kRows) {
      const int rows = pair_rows - row0 < Shape::kRows ? pair_rows - row0 : Shape::kRows;
      WarpAttention<T, Shape> acc;
      acc.clear();
      if (!range.empty()) {
        attend_range<T, Shape>(acc, smem, p, seg, range, row0, warp_m * 16 < rows, warp_m, warp_v,
                               warp_n, lane, thread);
      }
      acc.finish();
      Epilogue<T, Shape>::stash(acc, smem, warp_m, warp_v, warp_n, lane);
      __syncthreads();
      Epilogue<T, Shape>::write_rows(smem, p, seg, row0, rows, thread);
      __syncthreads();  // scratch read before the next pass's copies overwrite it
    }
    if (seg.slot >= 0) Epilogue<T, Shape>::arrive(p, seg, smem, &last_flag, thread);
  }
  if (p.trace != nullptr && thread == 0) {
    p.trace[blockIdx.x * kTraceWords + 2] = ptx::global_timer_ns();
  }
}

}  // namespace leanattn::cuda
