// TSC cycles per token and KV head of the CPU engine on a cache-resident problem (32/8 heads,
// d 128, one request of 256 tokens: 1 MiB of f16 K and V, half that in 8 bits), one worker on
// the calling thread, for every KV dtype and SIMD target: what the 8-bit conversions cost where
// memory does not limit. Median of the runs; the TSC runs at a constant rate, so compare dtypes
// within one target (a same-run ratio), not with other machines' core cycles.
//   kernel_cycles [runs = 400] [tokens = 256]
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/host_case.hpp"
#include "leanattn/cpu_engine.hpp"

int main(int argc, char** argv) {
  using namespace leanattn;
  const int runs = argc > 1 ? std::atoi(argv[1]) : 400;
  const std::int32_t tokens = argc > 2 ? std::atoi(argv[2]) : 256;
  std::printf(
      "32/8 heads, d 128, %d tokens, 1 worker: TSC cycles per token x KV head (median of "
      "%d runs)\n%-8s",
      tokens, runs, "simd");
  const DType types[] = {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2, DType::int8};
  for (DType t : types) std::printf(" %10s", std::string(dtype_name(t)).c_str());
  std::printf("\n");
  for (const std::string& simd : cpu::simd_targets()) {
    std::printf("%-8s", simd.c_str());
    for (DType t : types) {
      DecodeProblem p;
      p.q_heads = 32;
      p.kv_heads = 8;
      p.head_dim = 128;
      p.seq_lens = {tokens};
      p.q_dtype = DType::f16;
      p.kv_dtype = t;
      p.kv_scales = default_kv_scales(t);
      harness::HostCase c = harness::make_case(p, 1);
      cpu::Engine engine({.workers = 1, .simd = simd, .inline_kv_bytes = 1ll << 40});
      const Plan plan = engine.plan(c.problem, {});
      const DecodeTensors tensors = c.tensors();
      std::vector<double> cycles;
      for (int i = 0; i < runs + 20; ++i) {
        const unsigned long long start = __rdtsc();
        engine.run(c.problem, plan, tensors);
        const unsigned long long end = __rdtsc();
        if (i >= 20) cycles.push_back(static_cast<double>(end - start));  // 20 warm-up runs
      }
      std::nth_element(cycles.begin(), cycles.begin() + runs / 2, cycles.end());
      std::printf(" %10.1f", cycles[static_cast<std::size_t>(runs / 2)] / (tokens * p.kv_heads));
    }
    std::printf("\n");
  }
  return 0;
}
