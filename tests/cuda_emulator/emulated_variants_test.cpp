// The attention variants in the unmodified CUDA decode kernel, run by the CPU emulator, against the
// fp64 reference with the project's accuracy policy: several query tokens per request (causal or
// not) packed beside the GQA group in the MMA rows, sliding windows shorter and longer than the
// sequence and with their first key on a tile edge, soft-caps near the score range, sinks far
// above every score, ALiBi, and the combinations models use; every configuration of the table
// (one and two passes of rows; the 8-bit ones on fp8 and int8 caches with every scale
// granularity), lean/split/head, contiguous and paged caches, empty requests.
// Outputs are poisoned before each run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "emulated_case.hpp"

namespace leanattn::emulator {
namespace {

struct VariantCase {
  const char* name;
  std::int32_t q_len;
  AttentionVariant variant;
  float sink_value = 0.0f;  // > 0: every sink set to this (far above every score)
};

// Tile 16 throughout: with q_len 1 and window 17, request 130's first planned key is 112 = 7 x 16
// (a window edge on a tile edge); with q_len 2 and window 16 it is 112 too.
const VariantCase kCases[] = {
    {"q_len 4 causal", 4, {}},
    {"q_len 3 non-causal", 3, {.causal = false}},
    {"window 17, edge on a tile edge", 1, {.window_left = 17}},
    {"q_len 2 window 16, edge on a tile edge", 2, {.window_left = 16}},
    {"q_len 2 window 0 (own key only)", 2, {.window_left = 0}},
    {"q_len 5 window longer than the sequence, softcap near the scores",
     5,
     {.window_left = 100000, .softcap = 1.0f}},
    {"gemma2: q_len 2 window 40 + softcap 30", 2, {.window_left = 40, .softcap = 30.0f}},
    {"gpt-oss: window 33 + sinks above every score", 1, {.window_left = 33, .sinks = true}, 60.0f},
    {"ALiBi, q_len 3 non-causal", 3, {.causal = false, .alibi = true}},
    {"everything, q_len 8", 8, {.window_left = 33, .softcap = 2.5f, .sinks = true, .alibi = true}},
};

// A group for `k` and q_len: q_len x group rows in one 16-row tile for one warp row; for two or
// four, more than 16 rows, and more than a pass holds (several passes) when `two_passes`.
std::int32_t group_for(const KernelInfo& k, std::int32_t q_len, bool two_passes) {
  if (k.warps_m == 1) return std::max(1, 16 / q_len);
  return two_passes ? k.rows / q_len + 1 : 16 / q_len + 1;
}

TEST(EmulatedVariants, EveryVariantOnSeveralConfigurationsStrategiesAndLayouts) {
  const std::vector<KernelInfo> kernels = emulated_kernels();
  std::vector<int> covered(kernels.size(), 0);
  int index = 0;
  for (const VariantCase& vc : kCases) {
    for (int j = 0; j < 3; ++j, ++index) {  // 30 runs: every configuration (28 at most)
      const KernelInfo& k = kernels[static_cast<std::size_t>(index) % kernels.size()];
      const std::int32_t group = group_for(k, vc.q_len, index % 3 == 0);
      DecodeProblem p = make_problem({45, 0, 8, 17, 130}, group, 2, k, index);
      p.q_len = vc.q_len;
      p.variant = vc.variant;
      const bool paged = index % 2 == 1;
      if (paged) {
        p.layout = KvLayout::paged;
        p.page_size = 3 + index % 7;
      }
      ASSERT_EQ(kernel_for(p).name, k.name) << vc.name;
      ++covered[static_cast<std::size_t>(index) % kernels.size()];
      harness::HostCase hc =
          harness::make_case(p, static_cast<std::uint64_t>(index) + 70, k.v_from_k);
      if (vc.sink_value > 0.0f) {
        for (float& s : hc.sinks) s = vc.sink_value;
      }
      auto ref = reference::naive_attention(hc.problem, hc.tensors());
      auto naive = harness::naive_same_precision(hc.problem, hc.tensors());
      Checked c{std::move(hc), std::move(ref), std::move(naive)};
      // 3 workers: ranges cross heads and requests; 8: most pairs split over several CTAs.
      const std::int32_t workers = paged ? 8 : 3;
      for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
        const Plan plan =
            EmulatedDevice::plan(c.c.problem, workers, {.strategy = s, .tile_tokens = 16});
        EmulatedDevice device;
        RunOptions o;
        o.seed = static_cast<std::uint64_t>(index * 10 + static_cast<int>(s));
        EXPECT_EQ(run_and_check(device, c, plan, o), "")
            << vc.name << ": " << k.name << " " << dtype_name(p.kv_dtype) << " "
            << kv_scales_name(p.kv_scales) << " group " << group << " q_len " << p.q_len << " "
            << (paged ? "paged" : "contiguous") << " " << strategy_name(s) << " workers "
            << workers;
      }
    }
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_GT(covered[i], 0) << kernels[i].name << " ran no variant";
  }
}

}  // namespace
}  // namespace leanattn::emulator
