// The emulator catches a wrong fragment index: this test links a variant of the kernel whose K
// ldmatrix lane map is Q's (tests/cuda_emulator/CMakeLists.txt makes the copy of
// common/mma_layout.hpp), and the run must fail the fp64 check. The same library's device
// planner counts every cut as a pair's first (a copy of common/lean_line.hpp): its plan must
// differ from the host planner's.
#include <gtest/gtest.h>

#include <algorithm>

#include "emulated_case.hpp"
#include "emulator/emulated_capture.hpp"

namespace leanattn::emulator {
namespace {

TEST(EmulatorCatches, AWrongFragmentIndex) {
  ASSERT_EQ(LEANATTN_MUTATION_APPLIED, 1)
      << "the mutation's anchor is no longer in src/cuda/common/mma_layout.hpp: update it in "
         "tests/cuda_emulator/CMakeLists.txt";
  const KernelInfo k = kernel_named("f16_d64_wm1");
  Checked c = checked_case(make_problem({45, 130}, 5, 2, k), 9);
  const Plan plan = EmulatedDevice::plan(c.c.problem, 3, {.tile_tokens = 16});
  EmulatedDevice device;
  EXPECT_NE(run_and_check(device, c, plan), "");
}

TEST(EmulatorCatches, ADevicePlannerThatMisnumbersReductions) {
  ASSERT_EQ(LEANATTN_PLANNER_MUTATION_APPLIED, 1)
      << "the planner mutation's anchor is no longer in src/cuda/common/lean_line.hpp: update it "
         "in tests/cuda_emulator/CMakeLists.txt";
  // One long request over 5 workers: its pair is cut four times.
  const KernelInfo k = kernel_named("f16_d64_wm1");
  Checked c = checked_case(make_problem({20, 300, 7}, 4, 1, k), 11);
  const Plan plan = EmulatedDevice::plan(c.c.problem, 5, {.tile_tokens = 16});
  EmulatedCapturedStep step(c.c.problem, 5, 16);
  std::copy(c.c.problem.seq_lens.begin(), c.c.problem.seq_lens.end(), step.seq_lens().begin());
  step.plan_only();
  // (Its decode would fail anyway: this library's kernel has the fragment mistake too.)
  ASSERT_EQ(plan.reductions.size(), 1u);
  EXPECT_EQ(step.plan().reductions.size(), 4u);
}

}  // namespace
}  // namespace leanattn::emulator
