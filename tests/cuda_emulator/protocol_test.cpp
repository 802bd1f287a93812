// The CUDA kernel's cross-CTA protocol on the emulator (tools/cuda_emulator): the last-arriver
// merge gives bitwise the same output whatever the scheduling seed (thread order, which CTAs start
// first and how they interleave, so which piece arrives last), and a workspace kept across plans
// A, B, A (the engine's counter bookkeeping, mirrored by EmulatedDevice) gives correct outputs
// every time. While the workspace layout still moves the counters with the plan (the CUDA
// first-run issue's defect: plan B's slots overwrite plan A's zeroed counters), the second run of A
// must fail instead: that is the emulator catching the defect.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "emulated_case.hpp"

namespace leanattn::emulator {
namespace {

TEST(EmulatedProtocol, OutputIsBitwiseTheSameWhateverTheArrivalOrder) {
  for (const char* name : {"bf16_d128_wm1", "f16_d64_wm4"}) {
    const KernelInfo k = kernel_named(name);
    Checked c = checked_case(make_problem({45, 0, 1, 17, 130, 300}, k.rows / 3, 2, k), 17);
    const Plan plan = EmulatedDevice::plan(c.c.problem, 9, {.tile_tokens = 16});
    ASSERT_FALSE(plan.reductions.empty());
    std::vector<std::byte> first_out;
    std::vector<float> first_lse;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      EmulatedDevice device;
      RunOptions o;
      o.seed = seed;
      o.resident = seed % 2 == 0 ? 9 : 3;
      ASSERT_EQ(run_and_check(device, c, plan, o), "") << name << " seed " << seed;
      if (seed == 1) {
        first_out = c.c.out;
        first_lse = c.c.lse;
        continue;
      }
      EXPECT_TRUE(c.c.out == first_out) << name << " seed " << seed << ": output differs";
      EXPECT_EQ(0, std::memcmp(c.c.lse.data(), first_lse.data(), first_lse.size() * 4))
          << name << " seed " << seed << ": lse differs";
    }
  }
}

TEST(EmulatedProtocol, PlansABAOnOneWorkspace) {
  const KernelInfo k = kernel_named("bf16_d64_wm1");
  Checked c = checked_case(make_problem({300, 200, 90}, 4, 2, k), 5);
  const Plan a = EmulatedDevice::plan(c.c.problem, 3, {.tile_tokens = 64});
  const Plan b = EmulatedDevice::plan(c.c.problem, 24, {.tile_tokens = 16});
  ASSERT_FALSE(a.reductions.empty());
  ASSERT_GT(b.num_slots, a.num_slots);
  const WorkspaceLayout wa = EmulatedDevice::workspace_layout(a);
  const WorkspaceLayout wb = EmulatedDevice::workspace_layout(b);
  std::vector<std::byte> workspace(static_cast<std::size_t>(std::max(wa.bytes, wb.bytes)) + 256,
                                   std::byte{0xff});
  void* ws = workspace.data() + (256 - reinterpret_cast<std::uintptr_t>(workspace.data()) % 256);
  EmulatedDevice device;
  const std::string first_a = run_on(device, c, a, ws);
  const std::string then_b = run_on(device, c, b, ws);
  const std::string again_a = run_on(device, c, a, ws);
  EXPECT_EQ(first_a, "");
  EXPECT_EQ(then_b, "");
  // B's slots cover A's counters when the counters follow the slots.
  const bool defect = wa.counters_offset != wb.counters_offset && wa.counters_offset < wb.m_offset;
  std::printf("  plan A's counters at byte %lld, plan B's slots end at byte %lld: %s\n",
              static_cast<long long>(wa.counters_offset), static_cast<long long>(wb.m_offset),
              defect ? "the defect is present (A's second run must fail)" : "no overlap");
  if (defect) {
    EXPECT_NE(again_a, "") << "the workspace layout still moves the counters with the plan, and "
                              "the emulator no longer catches it";
  } else {
    EXPECT_EQ(again_a, "");
  }
}

}  // namespace
}  // namespace leanattn::emulator
