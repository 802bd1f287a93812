// Random decode problems for property tests, `leanattn check` and the fuzzer's seeds: GQA
// ratios (powers of two and not), ragged and empty lengths around the tile size, contiguous and
// paged layouts with small and large pages, every dtype, mixed batches (per-request query
// counts up to 12), and the attention variants (q_len up to 8, windows shorter and longer than the
// sequence and on tile edges, soft-caps near the score range, sinks, ALiBi, a per-key bias with
// hidden runs) alone and combined.
#pragma once

#include <cstdint>
#include <random>

#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::harness {

struct RandomLimits {
  std::int32_t max_batch = 6;
  std::int32_t max_kv_heads = 4;
  std::int32_t max_group = 16;
  std::int32_t max_len = 700;  // longest request, in tokens
  std::int32_t long_len = 0;   // > max_len: request 0 is drawn in (max_len, long_len] instead
  std::int32_t max_workers = 300;
  bool any_head_dim = false;  // false: 16..128 only (keeps fp64 checks fast)
  bool variants = true;       // draw q_len 1..8, causal or not, windows, soft-caps, sinks, ALiBi
  bool quantized_kv = true;   // a third of the cases get an 8-bit K/V cache with scales
  bool bias = true;           // with variants, a quarter of the cases add a per-key bias
                              //   (f32, f16 or bf16); off for the CUDA engine, which lacks it
  bool block_kv = true;       // a fifth of the cases with head_dim a multiple of 32 get a K/V
                              //   cache in ggml's q8_0 or q4_0 (off for the CUDA engine)
  bool mixed_queries = true;  // with variants, a quarter of the cases get per-request query
                              //   counts (query_start_loc: decode rows beside prefill chunks;
                              //   the CUDA engine takes them up to kMaxCudaQLen)
  bool value_widths = true;   // a sixth of the cases get V narrower than K (head_dim_v), half of
                              //   them V in K's rows (shared_kv), some absorbed-MLA shaped (one
                              //   KV head, K 576 / V 512); off for the CUDA engine
};

struct RandomCase {
  DecodeProblem problem;
  bool shared_kv = false;  // V is the start of K's rows (harness::make_case's shared_kv)
  Hardware hardware;
  PlanOptions options;
};

// Draws a problem, a worker count and plan options. The tile size is drawn first and lengths
// are drawn around it (0, 1, tile - 1, tile, tile + 1, 97, multiples, random).
RandomCase random_case(std::mt19937_64& rng, const RandomLimits& limits = {});

}  // namespace leanattn::harness
