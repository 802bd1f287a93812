// The lean schedule (head-major order) computed worker by worker from the lengths alone: what the
// device planner (kernel/plan_kernel.cuh) runs, one GPU thread per worker, so that a captured
// CUDA graph can plan each step from device-resident seq_lens. Every answer equals the host
// planner's (src/planner: lean_partition + assemble_plan, then make_plan_image), which
// tests/cuda_emulator/device_planner_test.cpp checks on random batches. Host/device, no memory of
// its own: the caller passes the per-request prefix and the per-worker scans.
//
// The line: request b's planned keys [first_key, seq_len) are tiles[b] = ceil(keys / tile)
// tiles; pair p = b * kv_heads + h starts at pair_start(p) = kv_heads * before[b] + h * tiles[b]
// (before[b]: tiles of the requests before b). Worker w's range is [w T / G, (w + 1) T / G).
// Its pairs are one run [first, end) in pair order: the pairs that overlap its range, and the
// empty pairs (no keys) whose position lies in it (the last worker also takes those at T; with
// T = 0 worker 0 takes every pair).
//
// Slots. A *cut* is a worker's range start strictly inside a pair (the piece starting there
// continues a split pair). cut(w) = 1 for such a worker (a non-empty range), first(w) = 1 when
// it is its pair's first cut. With cuts_before(w) and firsts_before(w) their exclusive scans over
// workers, the split pair whose first cut is at worker s has reduction index firsts_before(s) and
// slots [cuts_before(s) + firsts_before(s), + its cuts + 1) in tile order: exactly
// assemble_plan()'s numbering (split pairs in pair order, each pair's pieces in tile order).
// Worked example: lengths {40, 0, 70} tokens, tile 16, 1 KV head, 3 workers: tiles {3, 0, 5},
// T = 8, ranges [0, 2) [2, 5) [5, 8). Worker 0: pair 0 tiles [0, 2) (finalise, slot 0).
// Worker 1: pair 0 [2, 3) (partial, slot 1), the empty pair 1 at position 3 (direct), pair 2
// [0, 2) (finalise, slot 2). Worker 2: pair 2 [2, 5) (partial, slot 3). Cuts at workers 1 and 2
// (both first cuts): reductions {pair 0: slots 0-1, pair 2: slots 2-3}.
#pragma once

#include <cstdint>

#include "cuda/common/kernel_params.hpp"
#include "leanattn/core/ceil_div.hpp"
#include "leanattn/core/host_device.hpp"
#include "leanattn/core/variant_rules.hpp"

namespace leanattn::cuda {

struct LeanLine {
  const std::int32_t* seq_lens;  // [batch]
  const std::int32_t* tiles;     // [batch] planned tiles of request b (each of its KV heads)
  const std::int64_t* before;    // [batch + 1] exclusive scan of tiles
  std::int32_t batch;
  std::int32_t kv_heads;
  std::int32_t workers;
  std::int32_t tile_tokens;
  std::int32_t q_len;
  std::int32_t window_left;

  // Planned tiles of a request of seq_len keys.
  LEANATTN_HOST_DEVICE static std::int32_t tiles_of(std::int32_t seq_len, std::int32_t q_len,
                                                    std::int32_t window_left,
                                                    std::int32_t tile_tokens) {
    const std::int64_t keys = seq_len - first_planned_key(seq_len, q_len, window_left);
    return static_cast<std::int32_t>(ceil_div<std::int64_t>(keys, tile_tokens));
  }

  LEANATTN_HOST_DEVICE std::int64_t pairs() const {
    return static_cast<std::int64_t>(batch) * kv_heads;
  }
  LEANATTN_HOST_DEVICE std::int64_t total() const { return before[batch] * kv_heads; }
  LEANATTN_HOST_DEVICE std::int64_t range_begin(std::int32_t w) const {
    return static_cast<std::int64_t>(w) * total() / workers;
  }
  // The worker whose range holds line position x < T. (0 when T <= 0, which a consistent plan
  // never asks: a planner with a broken barrier may, and on the emulator a division by zero
  // would stop the process rather than show a wrong plan.)
  LEANATTN_HOST_DEVICE std::int32_t owner(std::int64_t x) const {
    const std::int64_t t = total();
    return t > 0 ? static_cast<std::int32_t>(((x + 1) * workers - 1) / t) : 0;
  }
  LEANATTN_HOST_DEVICE std::int32_t pair_tiles(std::int64_t p) const { return tiles[p / kv_heads]; }
  LEANATTN_HOST_DEVICE std::int64_t pair_start(std::int64_t p) const {
    const std::int64_t b = p / kv_heads;
    return before[b] * kv_heads + (p - b * kv_heads) * tiles[b];
  }

  // First pair of worker w's run: the first that ends after lo, or is empty at lo or later.
  LEANATTN_HOST_DEVICE std::int64_t first_pair(std::int64_t lo) const {
    std::int64_t a = 0, b = pairs();
    while (a < b) {
      const std::int64_t m = a + (b - a) / 2;
      const std::int64_t s = pair_start(m);
      const std::int32_t n = pair_tiles(m);
      if (s + n > lo || (n == 0 && s >= lo)) {
        b = m;
      } else {
        a = m + 1;
      }
    }
    return a;
  }
  // The first pair that starts at hi or later.
  LEANATTN_HOST_DEVICE std::int64_t end_pair(std::int64_t hi) const {
    std::int64_t a = 0, b = pairs();
    while (a < b) {
      const std::int64_t m = a + (b - a) / 2;
      if (pair_start(m) >= hi) {
        b = m;
      } else {
        a = m + 1;
      }
    }
    return a;
  }

  // Worker w's pairs [first, end) (its segments, one per pair, in this order).
  struct Run {
    std::int64_t first;
    std::int64_t end;
  };
  LEANATTN_HOST_DEVICE Run run(std::int32_t w) const {
    if (total() == 0) return w == 0 ? Run{0, pairs()} : Run{0, 0};
    const std::int64_t lo = range_begin(w);
    const std::int64_t hi = range_begin(w + 1);
    if (lo == hi) return {0, 0};  // more workers than tiles: an empty range
    return {first_pair(lo), w == workers - 1 ? pairs() : end_pair(hi)};
  }

  // Whether worker w's range starts strictly inside a pair (a cut), and whether that is the
  // pair's first cut (the worker that owns the pair's start also owns lo - 1).
  struct Cut {
    bool cut;
    bool first;
  };
  LEANATTN_HOST_DEVICE Cut cut_at(std::int32_t w) const {
    if (w == 0 || total() == 0) return {false, false};
    const std::int64_t lo = range_begin(w);
    if (lo == range_begin(w + 1)) return {false, false};
    const std::int64_t p = first_pair(lo);
    const std::int64_t s = pair_start(p);
    if (s >= lo) return {false, false};  // the range starts at a pair boundary
    return {true, owner(s) == owner(lo - 1)};
  }

  // Segment i of worker w's run (pair p = run.first + i) with its slot and reduction, and, for
  // a finalise segment, its reduction record (else reduction.num_slots = 0). cuts_before /
  // firsts_before: [workers + 1] exclusive scans of cut_at().
  struct Piece {
    DeviceSegment segment;
    DeviceReduction reduction;
  };
  LEANATTN_HOST_DEVICE Piece piece(std::int32_t w, std::int64_t p, const std::int32_t* cuts_before,
                                   const std::int32_t* firsts_before) const {
    const std::int32_t request = static_cast<std::int32_t>(p / kv_heads);
    const std::int32_t head =
        static_cast<std::int32_t>(p - static_cast<std::int64_t>(request) * kv_heads);
    const std::int64_t s = pair_start(p);
    const std::int64_t e = s + pair_tiles(p);
    std::int64_t tb = 0, te = 0;  // tiles of the pair
    std::int32_t slot = -1, reduction = -1;
    DeviceReduction r{request, head, 0, 0};
    if (e > s) {
      const std::int64_t lo = range_begin(w);
      const std::int64_t hi = range_begin(w + 1);
      tb = (s > lo ? s : lo) - s;
      te = (e < hi ? e : hi) - s;
      if (s < lo) {  // continues a split pair: the cut at w
        reduction = firsts_before[w + 1] - 1;
        slot = cuts_before[w] + firsts_before[w + 1];
      } else if (e > hi) {  // starts a split pair: its first cut is owned by owner(hi)
        const std::int32_t c = owner(hi);
        reduction = firsts_before[c];
        slot = cuts_before[c] + firsts_before[c];
        const std::int32_t last = owner(e - 1);  // the worker of the pair's last cut
        r.slot_begin = slot;
        r.num_slots = cuts_before[last + 1] - cuts_before[c] + 1;
      }
    }
    // Key positions of tiles [tb, te): Plan::tile_keys.
    const std::int64_t len = seq_lens[request];
    const std::int64_t first = first_planned_key(len, q_len, window_left);
    const std::int64_t kb = first + tb * tile_tokens;
    const std::int64_t ke = first + te * tile_tokens;
    DeviceSegment seg{request,
                      head,
                      static_cast<std::int32_t>(kb < len ? kb : len),
                      static_cast<std::int32_t>(ke < len ? ke : len),
                      slot,
                      reduction};
    return {seg, r};
  }
};

}  // namespace leanattn::cuda
