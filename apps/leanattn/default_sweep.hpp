// The representative decode sweep `leanattn bench` runs with no shape flags: Llama-3-8B-like
// GQA (32 query / 8 KV heads, d 128), MQA (8 / 1), MHA (32 / 32, d 64) and mixed-length batches,
// at contexts from 4k to 512k tokens where memory allows, f16 KV.
#pragma once

#include <string>
#include <vector>

#include "leanattn/problem.hpp"

namespace leanattn::cli {

struct SweepCase {
  std::string label;
  DecodeProblem problem;
};

// Cases whose K and V fit comfortably in `memory_bytes` (rotated copies and the probe buffer
// included).
std::vector<SweepCase> default_sweep(std::int64_t memory_bytes);

// The shapes of `leanattn bench --from-cache` with no shape flags: MHA 32/32, GQA 32/8 and MQA 8/1,
// d 128, one request each, K/V of `kv_dtype` (Q f16), contiguous or in pages of `page_size`
// tokens (0: contiguous), as many tokens (a multiple of 32) as make about `kv_bytes` of K and V.
std::vector<SweepCase> from_cache_sweep(std::int64_t kv_bytes, DType kv_dtype,
                                        std::int32_t page_size);

// MemAvailable from /proc/meminfo (bytes), or 8 GiB when it cannot be read.
std::int64_t available_memory();

// Checks, before anything is allocated, that a `leanattn bench` case fits: its K and V caches as
// the benchmark allocates them (capacity or pages) and a read-probe buffer of `probe_bytes` must
// fit in `memory_bytes` (shared_kv: no V cache, V is read from K's rows). Throws Error naming
// `argument` (the length flag the user gave) and the sizes otherwise.
void require_bench_fits(const DecodeProblem& problem, bool shared_kv, std::int64_t probe_bytes,
                        std::int64_t memory_bytes, const char* argument);

}  // namespace leanattn::cli
