// The emulator catches a wrong fragment index: this test links a variant of the kernel whose K
// ldmatrix lane map is Q's (tests/cuda_emulator/CMakeLists.txt makes the copy of
// common/mma_layout.hpp), and the run must fail the fp64 check.
#include <gtest/gtest.h>

#include "emulated_case.hpp"

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

}  // namespace
}  // namespace leanattn::emulator
