// The CPU engine's prefetch addresses (docs/cpu-engine.md, "Prefetch"): what each kernel call of
// a group (run_group in engine.cpp: segments of one request and tile range, run block by block,
// head by head) asks the kernel to prefetch of what comes next. A pure function of addresses, so
// it is tested on its own (tests/cpu/prefetch_plan_test.cpp).
#pragma once

#include <cstdint>

#include "leanattn/core/kv_addressing.hpp"

namespace leanattn::cpu {

// A group's K and V rows: heads [h0, h0 + heads) of `request` (not necessarily consecutive:
// `adjacent` says whether they are, and sit next to each other in every token row).
struct PrefetchGroup {
  const char* k_base = nullptr;  // k_cache, bytes
  const char* v_base = nullptr;  // v_cache, bytes
  KvAddressing k{}, v{};
  std::int64_t element_bytes = 2;
  std::int32_t request = 0;
  std::int32_t h0 = 0;         // the first segment's KV head
  std::int64_t heads = 1;      // segments in the group
  std::int64_t row_bytes = 0;  // one head's row: head_dim x element_bytes
  bool adjacent = false;       // heads h0 .. h0 + heads - 1, head stride = head_dim, K and V
};

// The lines kernel call `call` (0 .. heads - 1) of the block of tokens [t, next) prefetches,
// into k_lines and v_lines ([block_tokens + padding] entries: entry j is token j's start
// address; entries past block_tokens repeat the last): returns the lines per entry (0: none).
//   Adjacent heads: the next block, tokens [next, min(next + block_tokens, end)) of all heads,
//   is cut into `heads` equal runs of 64-byte lines in address order, call i taking run i
//   (DRAM then sees sequential streams).
//   Otherwise: the rows of the next call, head next_head (the following segment's KV head; for
//   the last call the first head, in the next block).
std::int32_t plan_prefetch(const PrefetchGroup& group, std::int64_t call, std::int64_t t,
                           std::int64_t next, std::int64_t end, std::int32_t next_head,
                           std::int32_t block_tokens, std::int32_t padded_rows,
                           const char** k_lines, const char** v_lines);

}  // namespace leanattn::cpu
