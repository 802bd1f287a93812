// The unmodified CUDA decode kernel, run by the CPU emulator (tools/cuda_emulator), against the
// fp64 reference with the project's accuracy policy: every configuration of the table (dtype x
// K/V width x head_dim x warp rows; the 8-bit ones on fp8 e4m3 / e5m2 and int8 caches with
// per-tensor, per-KV-head and per-token-head scales; DeepSeek's K 192 / V 128 and absorbed MLA's
// K 576 / V 512 read from K's rows), the three strategies, contiguous and paged
// KV, ragged and empty lengths, worker counts whose ranges cross head and request boundaries;
// outputs poisoned before each run.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "emulated_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/sanitized.hpp"

namespace leanattn::emulator {
namespace {

// A fresh device per run: a new workspace (poisoned, counters zeroed), as for a first launch.
TEST(EmulatedKernel, EveryConfigurationStrategyAndLayoutAgainstTheReference) {
  int kv8_index = 0;  // the 8-bit caches in turn over the 8-bit configurations' runs
  // Under the sanitizers each configuration runs one strategy, in turn (the release stage runs all
  // three on each): every strategy's plans still reach a third of the configurations.
  int kernel_index = 0;
  for (const KernelInfo& k : emulated_kernels()) {
    const int turn = kernel_index++ % 3;
    // One pass with a partial tile; for 2 or 4 warp rows also several passes over the tokens.
    const std::vector<std::int32_t> groups =
        k.warps_m == 1 ? std::vector<std::int32_t>{5} : std::vector<std::int32_t>{17, k.rows + 6};
    for (std::int32_t group : groups) {
      for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
        DecodeProblem p = make_problem({45, 0, 1, 17, 130}, group, 2, k, kv8_index);
        if (k.kv_bits == 8) ++kv8_index;
        if (layout == KvLayout::paged) {
          p.layout = KvLayout::paged;
          p.page_size = 3 + group % 7;
        }
        ASSERT_EQ(kernel_for(p).name, k.name);
        Checked c =
            checked_case(p, static_cast<std::uint64_t>(k.head_dim * 100 + group), k.v_from_k);
        // 3 workers: ranges cross heads and requests; 8: most pairs split over several CTAs.
        const std::int32_t workers = layout == KvLayout::paged ? 8 : 3;
        for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
          if (harness::kSanitized && static_cast<int>(s) % 3 != turn) continue;
          const Plan plan =
              EmulatedDevice::plan(c.c.problem, workers, {.strategy = s, .tile_tokens = 16});
          EmulatedDevice device;
          RunOptions o;
          o.seed = static_cast<std::uint64_t>(group * 10 + static_cast<int>(s));
          EXPECT_EQ(run_and_check(device, c, plan, o), "")
              << k.name << " " << dtype_name(p.kv_dtype) << " " << kv_scales_name(p.kv_scales)
              << " group " << group << " " << (layout == KvLayout::paged ? "paged" : "contiguous")
              << " " << strategy_name(s) << " workers " << workers;
        }
      }
    }
  }
}

// Random problems (GQA ratios, ragged and empty lengths around the tile, paged layouts, worker
// counts, 8-bit caches of every format and scale granularity, variants) moved to a configuration
// the kernel has, as `leanattn check --backend cuda-emulated` does; each strategy with a random
// scheduling seed.
TEST(EmulatedKernel, RandomProblemsAgainstTheReference) {
  std::mt19937_64 rng(2024);
  harness::RandomLimits limits;
  limits.max_batch = 4;
  limits.bias = false;      // the CUDA engine does not take a bias yet
  limits.block_kv = false;  // nor ggml's block formats
  limits.max_kv_heads = 2;
  limits.max_len = 300;
  limits.max_workers = 24;
  limits.any_head_dim = true;
  for (int i = 0; i < 10; ++i) {
    harness::RandomCase rc = harness::random_case(rng, limits);
    DecodeProblem p = rc.problem;
    if (p.q_dtype == DType::f32) p.q_dtype = rng() % 2 == 0 ? DType::f16 : DType::bf16;
    if (!is_quantized(p.kv_dtype)) p.kv_dtype = p.q_dtype;
    p.head_dim = compiled_head_dim(p.head_dim);
    if (p.head_dim_v != 0 && p.value_dim() != p.head_dim) {  // DeepSeek's widths
      // V in K's rows: absorbed MLA (576 / 512); its own cache: the model's 192 / 128; the
      // kernels read these widths from 16-bit caches only.
      p.head_dim = rc.shared_kv ? 576 : 192;
      p.head_dim_v = rc.shared_kv ? 512 : 128;
      if (is_quantized(p.kv_dtype)) {
        p.kv_dtype = p.q_dtype;
        p.kv_scales = KvScales::none;
      }
    }
    Checked c = checked_case(p, rng(), rc.shared_kv);
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      PlanOptions o{.strategy = s, .tile_tokens = rc.options.tile_tokens};
      const Plan plan = EmulatedDevice::plan(c.c.problem, rc.hardware.workers, o);
      EmulatedDevice device;
      RunOptions r;
      r.seed = rng();
      r.early_landing = i % 2 == 0 ? 0.0 : 0.2;
      EXPECT_EQ(run_and_check(device, c, plan, r), "")
          << "case " << i << " " << kernel_for(c.c.problem).name << " " << dtype_name(p.kv_dtype)
          << " " << kv_scales_name(p.kv_scales) << " " << strategy_name(s) << " workers "
          << rc.hardware.workers << " tile " << o.tile_tokens;
    }
  }
}

// An 8-bit cache needs f16 or bf16 Q: f32 Q is refused by name, by the lookup every entry point
// uses.
TEST(EmulatedKernel, RefusesF32QueriesWithAnEightBitCache) {
  for (DType kv : {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8}) {
    DecodeProblem p = make_problem({45, 17}, 4, 2, emulated_kernels().front());
    p.q_dtype = DType::f32;
    p.kv_dtype = kv;
    p.kv_scales = default_kv_scales(kv);
    const std::string why = why_unsupported(p);
    EXPECT_EQ(why.rfind("q_dtype: must be f16 or bf16 with an 8-bit cache", 0), 0u) << why;
    EXPECT_THROW(kernel_for(p), Error) << why;
  }
}

// ggml's block formats are refused by name (docs/cuda-engine.md: they do not fit the stages'
// 16-byte copies), for every query type.
TEST(EmulatedKernel, RefusesGgmlBlockFormats) {
  for (DType kv : {DType::q8_0, DType::q4_0}) {
    for (DType q : {DType::f16, DType::bf16}) {
      DecodeProblem p = make_problem({45, 17}, 4, 2, emulated_kernels().front());
      p.q_dtype = q;
      p.kv_dtype = kv;
      p.kv_scales = KvScales::none;
      const std::string why = why_unsupported(p);
      EXPECT_EQ(why.rfind("kv_dtype: the CUDA engine does not read ggml's block formats", 0), 0u)
          << why;
      EXPECT_THROW(kernel_for(p), Error) << why;
    }
  }
  // An f16 K with a q8_0 V (llama.cpp's -ctv) would match the f16 kernel by K's type alone.
  DecodeProblem mixed = make_problem({45, 17}, 4, 2, emulated_kernels().front());
  mixed.q_dtype = mixed.kv_dtype = DType::f16;
  mixed.v_dtype = DType::q8_0;
  const std::string why = why_unsupported(mixed);
  EXPECT_EQ(why.rfind("v_dtype: the CUDA engine reads K and V of one type", 0), 0u) << why;
  EXPECT_THROW(kernel_for(mixed), Error) << why;
}

// K and V of widths the table has no row for are refused by name (head_dim_v), listing the pairs
// it has; so are 8-bit caches at DeepSeek's widths. A width stated equal is the same problem as 0.
TEST(EmulatedKernel, RefusesKAndVWidthsItHasNoConfigurationFor) {
  DecodeProblem p = make_problem({45, 17}, 4, 2, emulated_kernels().front());
  p.head_dim_v = p.head_dim - 16;
  std::string why = why_unsupported(p);
  EXPECT_EQ(why.rfind("head_dim_v: the CUDA engine reads K and V of different widths only as", 0),
            0u)
      << why;
  EXPECT_NE(why.find("576 / 512 (V from K's rows)"), std::string::npos) << why;
  EXPECT_THROW(kernel_for(p), Error) << why;
  p.head_dim_v = p.head_dim;
  EXPECT_EQ(why_unsupported(p), "");
  p.head_dim = 576;
  p.head_dim_v = 512;
  EXPECT_EQ(why_unsupported(p), "");
  p.kv_dtype = DType::fp8_e4m3;
  p.kv_scales = KvScales::per_tensor;
  why = why_unsupported(p);
  EXPECT_EQ(why.rfind("head_dim_v: the CUDA engine reads K and V of different widths only as", 0),
            0u)
      << why;
  EXPECT_NE(why.find("(K / V: none)"), std::string::npos) << why;
}

// The K 576 / V 512 configuration reads V from K's rows: a separate V cache of those widths is
// refused by name (v_cache) before anything runs, the outputs left as they were.
TEST(EmulatedKernel, RefusesAVCacheOfItsOwnWhereTheKernelReadsVFromK) {
  const KernelInfo k = kernel_named("bf16_d576_v512k_wm2_wv2");
  Checked c = checked_case(make_problem({45, 17}, 16, 1, k), 4, false);
  const Plan plan = EmulatedDevice::plan(c.c.problem, 3, {.tile_tokens = 16});
  EmulatedDevice device;
  const std::string why = run_and_check(device, c, plan);
  EXPECT_EQ(why.rfind("threw: v_cache: must be k_cache with K's strides", 0), 0u) << why;
}

}  // namespace
}  // namespace leanattn::emulator
