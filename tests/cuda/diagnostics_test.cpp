// What the first GPU run should log besides pass/fail (scripts/device-check.sh runs these):
//   KernelAttributes: per configuration, registers, local (spill) bytes, static and dynamic
//     shared memory, and resident CTAs per SM from the occupancy API, as the engine launches it;
//   TinyCasePerConfiguration: per configuration, one tiny split plan against the reference, plain
//     and with q_len 3, a window, a soft-cap, sinks and ALiBi (what compute-sanitizer memcheck /
//     racecheck / synccheck run, in seconds);
//   TracedRuns: per-CTA traces (SM id, start, end, merge time) of a few lean plans at the
//     occupancy: the measured residency (most CTAs on one SM at once) and the merge tail.
// With LEANATTN_DIAG_DIR set, kernels.csv and trace-<case>.csv are written there. Every test
// skips without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/kernel_registry.hpp"
#include "cuda_harness/device_case.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda {
namespace {

std::string diag_path(const std::string& name) {
  const char* dir = std::getenv("LEANATTN_DIAG_DIR");
  return dir == nullptr || *dir == 0 ? "" : std::string(dir) + "/" + name;
}

DecodeProblem problem_for(const KernelHandle& k, std::vector<std::int32_t> lens,
                          std::int32_t kv_heads) {
  DecodeProblem p = harness::test_problem(std::move(lens), kv_heads * (k.warps_m == 1 ? 4 : 24),
                                          kv_heads, k.head_dim, k.dtype);
  p.head_dim_v = k.head_dim_v;  // DeepSeek's widths: V from K's rows where k.v_from_k
  if (k.kv_bits == 8) {         // an 8-bit configuration: an fp8 e4m3 cache, one scale per tensor
    p.kv_dtype = DType::fp8_e4m3;
    p.kv_scales = KvScales::per_tensor;
  }
  return p;
}

class Diagnostics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
    engine_ = std::make_unique<Engine>();
  }
  std::unique_ptr<Engine> engine_;
};

TEST_F(Diagnostics, KernelAttributes) {
  const DeviceInfo& dev = engine_->device();
  std::printf("[device] %s: %d SMs, cc %d.%d, %d bytes smem per SM, %d per CTA (opt-in)\n",
              dev.name.c_str(), dev.sm_count, dev.cc_major, dev.cc_minor, dev.smem_per_sm,
              dev.smem_per_block);
  std::ofstream csv;
  if (const std::string path = diag_path("kernels.csv"); !path.empty()) csv.open(path);
  if (csv) csv << "kernel,regs,local_bytes,static_smem,dynamic_smem,stages,block_n,ctas_per_sm\n";
  for (const KernelHandle& k : compiled_kernels()) {
    const DecodeProblem p = problem_for(k, {64}, 1);
    if (!engine_->can_run(p) || find_kernel(p, dev.smem_per_block) != &k) {
      std::printf("[kernel] %s: not used on this device (%s)\n", k.name.c_str(),
                  engine_->why_not(p).c_str());
      continue;
    }
    const std::int32_t per_sm = engine_->workers_for(p) / dev.sm_count;  // sets the smem limit
    cudaFuncAttributes a{};
    ASSERT_EQ(cudaFuncGetAttributes(&a, k.kernel), cudaSuccess) << k.name;
    std::printf(
        "[kernel] %s: %d regs, %zu B local, %zu B static + %d B dynamic smem, %d stages "
        "of %d tokens, %d CTAs/SM\n",
        k.name.c_str(), a.numRegs, a.localSizeBytes, a.sharedSizeBytes, k.smem_bytes, k.stages,
        k.block_n, per_sm);
    if (csv) {
      csv << k.name << ',' << a.numRegs << ',' << a.localSizeBytes << ',' << a.sharedSizeBytes
          << ',' << k.smem_bytes << ',' << k.stages << ',' << k.block_n << ',' << per_sm << '\n';
    }
    EXPECT_EQ(a.localSizeBytes, 0u) << k.name << " spills";
    EXPECT_GE(per_sm, 1) << k.name;
  }
}

TEST_F(Diagnostics, TinyCasePerConfiguration) {
  for (const KernelHandle& k : compiled_kernels()) {
    for (bool variants : {false, true}) {
      DecodeProblem p = problem_for(k, {70, 0, 33}, 2);
      if (variants) {  // 3 query tokens (4 warp rows: 72 rows, two passes) and every variant
        p.q_len = 3;
        p.variant = {.window_left = 40, .softcap = 2.5f, .sinks = true, .alibi = true};
        if (k.kv_bits == 8) {  // and an int8 cache with per-token-head scales
          p.kv_dtype = DType::int8;
          p.kv_scales = KvScales::per_token_head;
        }
      }
      if (!engine_->can_run(p)) continue;
      harness::HostCase c = harness::make_case(p, 3, k.v_from_k);
      const auto ref = reference::naive_attention(c.problem, c.tensors());
      // 5 workers over 3 tiles-per-pair of 16 tokens: split pairs, a merge, a direct pair.
      const Plan plan =
          make_plan(c.problem, {5}, {.order = LineOrder::head_major, .tile_tokens = 16});
      run_host_case(*engine_, c, plan);
      const harness::Accuracy a = harness::check_accuracy(c, ref, true);
      std::printf("[tiny] %s%s (%s KV): %s\n", k.name.c_str(), variants ? " variants" : "",
                  std::string(dtype_name(p.kv_dtype)).c_str(),
                  a.ok() ? "ok" : a.first_problem.c_str());
      EXPECT_TRUE(a.ok()) << k.name << (variants ? " variants" : "") << ": " << a.first_problem;
    }
  }
}

// Most CTAs of one SM running at the same time, from the traces' start/end events.
int max_resident(const std::vector<CtaTrace>& t) {
  std::map<std::int32_t, std::vector<std::pair<std::int64_t, int>>> by_sm;
  for (const CtaTrace& x : t) {
    by_sm[x.sm].push_back({x.start_ns, 1});
    by_sm[x.sm].push_back({x.end_ns, -1});
  }
  int best = 0;
  for (auto& [sm, ev] : by_sm) {
    std::sort(ev.begin(), ev.end(), [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;  // ends first
    });
    int now = 0;
    for (auto [t0, d] : ev) best = std::max(best, now += d);
  }
  return best;
}

TEST_F(Diagnostics, TracedRuns) {
  struct Case {
    const char* name;
    std::int32_t batch, q_heads, kv_heads, head_dim, len;
  };
  for (const Case& cs :
       {Case{"mqa16-b1-32k", 1, 16, 1, 64, 32768}, Case{"gqa8-b16-4k", 16, 32, 8, 128, 4096},
        Case{"mqa16-b1-128k", 1, 16, 1, 64, 131072}}) {
    const DecodeProblem p =
        harness::test_problem(std::vector<std::int32_t>(static_cast<std::size_t>(cs.batch), cs.len),
                              cs.q_heads, cs.kv_heads, cs.head_dim, DType::bf16);
    if (!engine_->can_run(p)) continue;
    harness::HostCase c = harness::make_case(p, 9);
    DeviceCase d(c);
    const Plan plan = engine_->plan(c.problem);
    engine_->run(c.problem, plan, d.tensors(), nullptr);  // warm-up (upload, attributes)
    const std::vector<CtaTrace> t = engine_->run_traced(c.problem, plan, d.tensors(), nullptr);
    std::int64_t t0 = t.front().start_ns, t1 = 0, merge = 0;
    std::vector<std::int64_t> ends;
    for (const CtaTrace& x : t) {
      t0 = std::min(t0, x.start_ns);
      t1 = std::max(t1, x.end_ns);
      merge = std::max(merge, x.merge_ns);
      ends.push_back(x.end_ns);
    }
    std::sort(ends.begin(), ends.end());
    const std::int64_t median_end = ends[ends.size() / 2];
    std::printf(
        "[trace] %s: %d CTAs (%zu reductions, tile %d), %.1f us, median CTA done at %.1f "
        "us, longest merge %.1f us, at most %d CTAs on one SM at once\n",
        cs.name, plan.workers, plan.reductions.size(), plan.tile_tokens,
        static_cast<double>(t1 - t0) / 1e3, static_cast<double>(median_end - t0) / 1e3,
        static_cast<double>(merge) / 1e3, max_resident(t));
    if (const std::string path = diag_path(std::string("trace-") + cs.name + ".csv");
        !path.empty()) {
      std::ofstream csv(path);
      csv << "cta,sm,start_ns,end_ns,merge_ns\n";
      for (std::size_t w = 0; w < t.size(); ++w) {
        csv << w << ',' << t[w].sm << ',' << t[w].start_ns - t0 << ',' << t[w].end_ns - t0 << ','
            << t[w].merge_ns << '\n';
      }
    }
    EXPECT_GE(max_resident(t), 1);
  }
}

}  // namespace
}  // namespace leanattn::cuda
