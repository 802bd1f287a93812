// The default sweep of `leanattn bench` (see default_sweep.hpp).
#include "default_sweep.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "leanattn/error.hpp"

namespace leanattn::cli {

namespace {

DecodeProblem gqa(std::int32_t q_heads, std::int32_t kv_heads, std::int32_t d,
                  std::vector<std::int32_t> lens) {
  DecodeProblem p;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.head_dim = d;
  p.seq_lens = std::move(lens);
  p.capacity = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());
  p.q_dtype = p.kv_dtype = DType::f16;
  return p;
}

double gib(double bytes) {
  return bytes / static_cast<double>(1ll << 30);
}

}  // namespace

std::vector<SweepCase> default_sweep(std::int64_t memory_bytes) {
  std::vector<SweepCase> all;
  for (std::int32_t ctx : {4096, 32768, 131072, 524288}) {
    all.push_back({"llama3-8b", gqa(32, 8, 128, {ctx})});
  }
  all.push_back({"llama3-b4", gqa(32, 8, 128, {16384, 16384, 16384, 16384})});
  for (std::int32_t ctx : {32768, 524288}) all.push_back({"mqa", gqa(8, 1, 128, {ctx})});
  for (std::int32_t ctx : {4096, 32768}) all.push_back({"mha-d64", gqa(32, 32, 64, {ctx})});
  all.push_back({"mixed-mqa", gqa(8, 1, 128, {262144, 4096, 4096, 4096, 4096, 4096, 4096, 4096})});
  all.push_back({"mixed-gqa", gqa(32, 8, 128, {65536, 1024, 2048, 512, 8192, 300, 4096, 100})});

  std::vector<SweepCase> fit;
  for (auto& c : all) {
    // K and V, their working copies and a probe buffer of the same size must fit in half of the
    // available memory.
    if (3 * c.problem.kv_bytes() <= memory_bytes / 2) fit.push_back(std::move(c));
  }
  return fit;
}

std::vector<SweepCase> from_cache_sweep(std::int64_t kv_bytes, DType kv_dtype,
                                        std::int32_t page_size) {
  std::vector<SweepCase> cases;
  const struct {
    const char* label;
    std::int32_t q_heads, kv_heads;
  } shapes[] = {{"mha", 32, 32}, {"gqa", 32, 8}, {"mqa", 8, 1}};
  for (const auto& s : shapes) {
    const auto token_bytes = 2 * s.kv_heads * row_units(kv_dtype, 128) *
                             static_cast<std::int64_t>(dtype_size(kv_dtype));  // K and V
    const auto tokens =
        static_cast<std::int32_t>(std::max<std::int64_t>(1, kv_bytes / token_bytes / 32) * 32);
    DecodeProblem p = gqa(s.q_heads, s.kv_heads, 128, {tokens});
    p.kv_dtype = kv_dtype;  // an 8-bit type: f16 Q and output, the type's default scales
    if (kv_dtype == DType::f32 || kv_dtype == DType::bf16) p.q_dtype = kv_dtype;
    p.kv_scales = default_kv_scales(kv_dtype);
    if (page_size > 0) {  // one request: its own pages, in a table of exactly those
      p.layout = KvLayout::paged;
      p.page_size = page_size;
      p.max_pages = static_cast<std::int32_t>(pages_for(tokens, page_size));
      p.num_pages = p.max_pages;
    }
    cases.push_back({s.label, p});
  }
  return cases;
}

std::int64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream is(line.substr(13));
      std::int64_t kib = 0;
      is >> kib;
      if (kib > 0) return kib * 1024;
    }
  }
  return 8ll << 30;
}

void require_bench_fits(const DecodeProblem& p, bool shared_kv, std::int64_t probe_bytes,
                        std::int64_t memory_bytes, const char* argument) {
  // Token rows of the K cache as allocated: [batch, capacity] or [num_pages, page_size].
  const double rows = p.layout == KvLayout::contiguous
                          ? static_cast<double>(p.batch()) * static_cast<double>(p.capacity)
                          : static_cast<double>(p.num_pages) * p.page_size;
  const DType v = p.value_dtype();
  const double kv =
      rows * p.kv_heads *
      static_cast<double>(row_units(p.kv_dtype, p.head_dim) * dtype_size(p.kv_dtype) +
                          (shared_kv ? 0 : row_units(v, p.value_dim()) * dtype_size(v)));
  const double probe = static_cast<double>(probe_bytes);
  const double memory = static_cast<double>(memory_bytes);
  require(kv + probe <= memory, argument, [&] {
    return fmt::format(
        "the case needs {:.1f} GiB for K and V and {:.1f} GiB for the read probe, more than the "
        "{:.1f} GiB of memory available; use fewer tokens or heads (or a smaller --probe-mib)",
        gib(kv), gib(probe), gib(memory));
  });
}

}  // namespace leanattn::cli
