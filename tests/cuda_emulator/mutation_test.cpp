// The emulator catches deliberate mistakes in the kernel's synchronisation: with any one
// __syncthreads of the kernel source dropped, or the cp.async.wait_group that lands a pipeline
// block before it is read, the run no longer matches the fp64 reference (or no longer gives the
// same bits under every schedule). Sites are found by running the kernel (call_sites()), so the
// test follows the source as it changes; each site's verdict is printed. Two barriers of the
// last-arriver protocol (Epilogue::arrive) cannot show on the emulator and are only reported: the
// one between the writers' __threadfence and the ticket orders memory visibility, which the
// emulator's one coherent memory does not model; the one after the flag is read is ordered, in
// the current source, by the next segment's barriers as well. The wrong fragment index is a
// build-time variant (fragment_mutant_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "emulated_case.hpp"

namespace leanattn::emulator {
namespace {

// A problem with several pipeline blocks per segment, split pairs and two passes per segment.
struct Scene {
  Checked c;
  Plan plan;
  std::vector<std::byte> clean_out;
};

Scene scene() {
  const KernelInfo k = kernel_named("bf16_d64_wm1");
  Checked c = checked_case(make_problem({300, 0, 17, 450}, 20, 1, k), 3);
  Plan plan = EmulatedDevice::plan(c.c.problem, 5, {.tile_tokens = 32});
  EmulatedDevice device;
  EXPECT_EQ(run_and_check(device, c, plan), "");
  std::vector<std::byte> out = c.c.out;
  return {std::move(c), std::move(plan), std::move(out)};
}

// True when the mutation shows: a failed check or different bits under some seed.
bool caught(Scene& s, const Mutations& m) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    EmulatedDevice device;
    RunOptions o;
    o.seed = seed;
    o.mutations = m;
    if (!run_and_check(device, s.c, s.plan, o).empty() || s.c.c.out != s.clean_out) return true;
  }
  return false;
}

TEST(EmulatorCatches, EveryDroppedBarrier) {
  Scene s = scene();
  const std::vector<std::string> sites = call_sites().barriers;
  ASSERT_GE(sites.size(), 4u);
  for (const std::string& site : sites) {
    Mutations m;
    m.drop_barrier = site;
    const bool c = caught(s, m);
    std::printf("  __syncthreads at %s dropped: %s\n", site.c_str(), c ? "caught" : "NOT caught");
    if (site.ends_with(" in arrive")) continue;
    EXPECT_TRUE(c) << site;
  }
}

TEST(EmulatorCatches, TheMissingWaitOfThePipeline) {
  Scene s = scene();
  const std::vector<std::string> sites = call_sites().waits;
  ASSERT_FALSE(sites.empty());
  int caught_sites = 0;
  for (const std::string& site : sites) {
    Mutations m;
    m.drop_wait = site;
    const bool c = caught(s, m);
    caught_sites += c;
    std::printf("  cp.async.wait_group at %s dropped: %s\n", site.c_str(),
                c ? "caught" : "not caught");
  }
  EXPECT_GE(caught_sites, 1);
}

}  // namespace
}  // namespace leanattn::emulator
