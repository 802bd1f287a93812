// The emulator catches deliberate mistakes in the kernel's synchronisation: with any one
// __syncthreads of the kernel source dropped, or the cp.async.wait_group that lands a pipeline
// block before it is read, the run no longer matches the fp64 reference (or no longer gives the
// same bits under every schedule). Copies land at their wait, or also at random earlier points
// (RunOptions::early_landing), so a copy overwriting data still being read shows too. Sites are
// found by running the kernel (call_sites()), so the test follows the source as it changes; each
// site's verdict is printed. Two barriers of the last-arriver protocol (Epilogue::arrive) cannot
// show on the emulator and are only reported: the one between the writers' __threadfence and the
// ticket orders memory visibility, which the emulator's one coherent memory does not model; the one
// after the flag is read is ordered, in the current source, by the next segment's barriers as well.
// The wrong fragment index is a build-time variant (fragment_mutant_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "emulated_case.hpp"
#include "harness/sanitized.hpp"

namespace leanattn::emulator {
namespace {

// Problems with several pipeline blocks per segment, split pairs merged by CTAs that then run
// further segments, groups of one and two passes (and small groups, whose merge gives a row
// several threads), a 16-bit and an 8-bit cache (the conversion's barrier).
struct Scene {
  Checked c;
  Plan plan;
  std::vector<std::byte> clean_out;
};

Scene scene(const char* kernel, std::int32_t group, std::int32_t workers, int kv8_index = 0) {
  const KernelInfo k = kernel_named(kernel);
  Checked c = checked_case(make_problem({300, 0, 17, 450, 33, 200}, group, 2, k, kv8_index), 3);
  Plan plan = EmulatedDevice::plan(c.c.problem, workers, {.tile_tokens = 32});
  EmulatedDevice device;
  EXPECT_EQ(run_and_check(device, c, plan), "");
  std::vector<std::byte> out = c.c.out;
  return {std::move(c), std::move(plan), std::move(out)};
}

// The scenes, with the call sites their clean runs reach.
std::vector<Scene> scenes(CallSites& sites) {
  clear_call_sites();
  std::vector<Scene> all;
  all.push_back(scene("bf16_d64_wm1", 3, 7));
  all.push_back(scene("f16_d128_wm4", 20, 9));
  all.push_back(scene("bf16_kv8_d64_wm1", 3, 7, 8));  // int8, per-token-head scales
  sites = call_sites();
  return all;
}

// How the mutation shows in some scene under some seed, with copies landing at their wait or,
// besides, at random earlier points: a failed check, a failed launch or different bits ("" when
// it does not show).
std::string caught(std::vector<Scene>& all, const Mutations& m) {
  for (Scene& s : all) {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      EmulatedDevice device;
      RunOptions o;
      o.seed = seed;
      o.early_landing = seed % 2 == 0 ? 0.25 : 0.0;
      o.mutations = m;
      std::string why = run_and_check(device, s.c, s.plan, o);
      if (why.empty() && s.c.c.out != s.clean_out) why = "output bits differ from the clean run";
      if (!why.empty()) return "seed " + std::to_string(seed) + ": " + why.substr(0, 90);
    }
  }
  return "";
}

// What these two check is the emulator's verdict on a broken schedule, the same with or without
// a sanitizer: they run in the release stage (33 and 10 s there, 56 and 15 s under ASan, Zen 4).
constexpr const char* kReleaseOnly = "the release stage runs it (a verdict, not memory safety)";

TEST(EmulatorCatches, EveryDroppedBarrier) {
  if (harness::kSanitized) GTEST_SKIP() << kReleaseOnly;
  CallSites all;
  std::vector<Scene> s = scenes(all);
  const std::vector<std::string>& sites = all.barriers;
  ASSERT_GE(sites.size(), 4u);
  for (const std::string& site : sites) {
    Mutations m;
    m.drop_barrier = site;
    const std::string c = caught(s, m);
    std::printf("  __syncthreads at %s dropped: %s\n", site.c_str(),
                c.empty() ? "NOT caught" : ("caught, " + c).c_str());
    if (site.ends_with(" in arrive")) continue;
    EXPECT_NE(c, "") << site;
  }
}

TEST(EmulatorCatches, TheMissingWaitOfThePipeline) {
  if (harness::kSanitized) GTEST_SKIP() << kReleaseOnly;
  CallSites all;
  std::vector<Scene> s = scenes(all);
  const std::vector<std::string>& sites = all.waits;
  ASSERT_FALSE(sites.empty());
  int caught_sites = 0;
  for (const std::string& site : sites) {
    Mutations m;
    m.drop_wait = site;
    const std::string c = caught(s, m);
    caught_sites += !c.empty();
    std::printf("  cp.async.wait_group at %s dropped: %s\n", site.c_str(),
                c.empty() ? "not caught" : ("caught, " + c).c_str());
  }
  EXPECT_GE(caught_sites, 1);
}

}  // namespace
}  // namespace leanattn::emulator
