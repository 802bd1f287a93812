// The planner's tuning rules as small pure functions, each with a worked example. Used by
// make_plan(); exposed so that tests, the CLI and users can see what the planner will pick.
#pragma once

#include <cstdint>
#include <vector>

namespace leanattn {

// Default lean-tile size in tokens for a head dimension: the size that keeps one tile's K and V
// at 64 KiB in 16-bit types (head_dim x tokens x 2 tensors x 2 bytes), as ONNX Runtime's
// LeanAttention does (256 tokens for d <= 64, 128 for d <= 128), and 64 tokens above.
//   head_dim 64 -> 256 tokens; 128 -> 128; 256 -> 64.
// K and V of different widths count their mean, (head_dim + head_dim_v) / 2 (0: as wide as K):
//   K 192 / V 128 -> 160 -> 64 tokens; absorbed MLA's K 576 / V 512 -> 64.
// Smaller tiles balance better, larger ones amortise per-tile work; the CPU engine's inner loop
// works in its own, smaller blocks, so this only sets the planner's granularity.
std::int32_t default_tile_tokens(std::int32_t head_dim, std::int32_t head_dim_v = 0);

// Lean-tile size for a GPU engine, whose workers are many more than a CPU's cores: the default
// tile, halved while the work has fewer tiles than workers (so every worker gets a tile), down
// to min_tokens. tiles(t) = kv_heads x sum over requests of ceil(seq_len / t).
//   16 query heads / 1 KV head, d 64, batch 1 at 4096 tokens, 264 workers: 256 tokens gives 16
//   tiles, 128 -> 32, 64 -> 64, 32 -> 128; min_tokens 32 stops there (128 tiles). At 128k tokens
//   the default's 512 tiles already exceed the workers: 256.
// The CPU engine keeps default_tile_tokens (its workers are cores).
std::int32_t gpu_tile_tokens(std::int32_t head_dim, std::int64_t kv_heads,
                             const std::vector<std::int32_t>& seq_lens, std::int32_t workers,
                             std::int32_t min_tokens);

// FlashAttention-2's split-KV heuristic (num_splits_heuristic in flash_api.cpp), used by the
// `split` strategy: the smallest split count whose wave efficiency is within 85% of the best.
//   units:      batch x kv_heads (work items before splitting)
//   workers:    persistent workers (SMs on a GPU)
//   max_tiles:  tiles of the longest request (FA2 sizes splits from max_seqlen_k)
//   max_splits: upper bound (FA2 uses 128)
// Rules: if units >= 0.8 x workers, one split (the machine is already nearly full). Otherwise,
// for s = 1..min(max_splits, workers, max_tiles), skip s when it gives the same tiles per split
// as s - 1, and score eff(s) = waves / ceil(waves) with waves = units x s / workers; return the
// smallest s with eff(s) >= 0.85 x max eff.
// Worked example: 1 request, 8 KV heads, 132 workers (an H100's SMs), 1024 tiles. units = 8 <
// 0.8 x 132 = 105.6, so splitting helps. s = 16 gives 128 units = 0.970 of one wave; s = 49 gives
// 392 units = 2.97 waves, eff 0.990, the best (s = 33, 66, 99 would fill whole waves but are not
// eligible: 1024 tiles in 33 splits is 32 per split, as in 32 splits). The bar is 0.85 x 0.990 =
// 0.841, and the smallest s above it is 14 (112 units, eff 0.848; s = 13 gives 0.788) -> 14.
std::int32_t fa2_num_splits(std::int64_t units, std::int32_t workers, std::int64_t max_tiles,
                            std::int32_t max_splits);

// The CPU's split count for the `split` strategy (SplitRule::even_workers). The CPU deals split
// chunks contiguously in token-row order (request -> split -> KV head), and its cores stream
// whole token rows best (docs/cpu-engine.md), so the rule shares *rows* (request x split, each
// holding every KV head's chunk) evenly: with `rows` requests the busiest worker gets
// ceil(rows x s / workers) of them. Take the smallest s whose balance eff(s) = (rows x s /
// workers) / ceil(rows x s / workers) is at least 0.9, trying s = 1 .. min(max_splits,
// max_tiles, workers / gcd(rows, workers)); the last bound always balances exactly (rows x s is a
// multiple of workers) and is returned when max_tiles stops the search first. No wave rule: a
// CPU's workers are its cores, few and equal.
//   32 query / 8 KV heads, batch 1, 2 workers: s = 1 leaves a worker idle (eff 0.5); s = 2 -> 2:
//   every KV head of the first half of the tokens to worker 0, of the second half to worker 1
//   (lean's token-major cut). Per pair instead (8 units, 1 split, heads 0-3 and 4-7) each
//   worker would read half of every token row.
//   MQA (1 KV head), batch 1, 2 workers: likewise -> 2.
//   Batch 4, 2 workers: s = 1 gives 2 + 2 requests, whole rows -> 1.
//   3 requests on 2 workers: s = 1 gives 2 + 1 (eff 0.75); s = 2 gives 3 + 3 -> 2.
//   5 requests on 16 workers: s = 1, 2 give eff 0.31, 0.63; s = 3 gives 15 rows, eff 0.94 -> 3.
//   1 request of 1 tile on 2 workers: max_tiles bounds s at 1 -> 1.
std::int32_t cpu_num_splits(std::int64_t rows, std::int32_t workers, std::int64_t max_tiles,
                            std::int32_t max_splits);

// FMAs a CPU worker does in the time it reads one byte of K and V from DRAM: about 35 G FMA/s on
// the many-rows path over 11 GB/s per worker (Zen 4, 2 workers, 2026-12-07; 32 G FMA/s in the
// row kernel over 10 GB/s before it, bench/results/mixed-batch-amd-epyc-2c-2026-12-06.txt),
// rounded to 3.
inline constexpr std::int64_t kFmasPerKvByte = 3;

// The query tokens of one request as the cost of its tiles sees them (the rules of
// core/variant_rules.hpp): the last `queries` of seq_len keys, token j at position
// seq_len - queries + j seeing keys [max(0, position - window_left), position + 1) when causal,
// [.., seq_len) when not; window_left < 0: no window.
struct TileQueries {
  std::int64_t seq_len = 0;
  std::int64_t queries = 1;
  bool causal = true;
  std::int64_t window_left = -1;
};

// (query token, key) pairs of keys [t0, t1) that the request's tokens see.
//   A 512-token chunk at depth 4096 (seq_len 4608, causal), keys [4352, 4608): token j sees
//   max(0, j - 255) of them -> 1 + ... + 255 + 256 = 32896 pairs (a quarter of 512 x 256).
std::int64_t visible_pairs(const TileQueries& queries, std::int64_t t0, std::int64_t t1);

// The cost of a lean tile, keys [t0, t1), of a request of a mixed batch, for lean's cut by cost
// (DecodeProblem::query_start_loc): the tile reads its keys' K and V once for every query row of
// the pair and does (head_dim + head_dim_v) FMAs per visible (row, key) pair; whichever takes
// longer bounds it (decode rows: the bytes; prefill chunks: the FMAs), so
//   cost = max((t1 - t0) x kv_row_bytes x kFmasPerKvByte,
//              group x visible_pairs(queries, t0, t1) x (head_dim + head_dim_v))
// in FMAs. group: query heads per KV head; kv_row_bytes: one token's K and V bytes of one KV
// head. Hidden pairs cost nothing: the CPU engine skips blocks of rows that see none of a block
// of keys (causal, window). (Adding the two instead, as when the row kernel did prefill, priced
// a GQA decode row 1.6x too high against a chunk: the workers' busy times 10-14 % apart.)
//   SmolLM2's 9/3 heads, d 64, f16 (kv_row_bytes 256, group 3), 256-key tiles: a decode token at
//   depth 4096, any tile: max(196608, 3 x 256 x 128) = 196608; a 512-token chunk at depth 4096,
//   its tile [0, 256): 3 x 131072 x 128 = 50331648 (256 decode tiles), its last tile
//   [4352, 4608): 3 x 32896 x 128 = 12632064 (a quarter of that).
std::int64_t tile_cost(const TileQueries& queries, std::int64_t t0, std::int64_t t1,
                       std::int32_t group, std::int64_t kv_row_bytes, std::int32_t head_dim,
                       std::int32_t head_dim_v);

}  // namespace leanattn
