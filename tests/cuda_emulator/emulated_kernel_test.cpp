// The unmodified CUDA decode kernel, run by the CPU emulator (tools/cuda_emulator), against the
// fp64 reference with the project's accuracy policy: every configuration of the table (dtype x
// head_dim x warp rows), the three strategies, contiguous and paged KV, ragged and empty lengths,
// worker counts whose ranges cross head and request boundaries; outputs poisoned before each run.
// Also: bitwise the same output whatever the scheduling seed (thread order, CTA start order and
// interleaving, so the last arriver differs), and plans A, B, A on one kept workspace.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "emulator/emulated_device.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::emulator {
namespace {

DecodeProblem make_problem(std::vector<std::int32_t> lens, std::int32_t group,
                           std::int32_t kv_heads, const KernelInfo& k) {
  DecodeProblem p;
  p.q_heads = group * kv_heads;
  p.kv_heads = kv_heads;
  p.head_dim = k.head_dim;
  p.seq_lens = std::move(lens);
  p.q_dtype = p.kv_dtype = k.dtype;
  return p;
}

struct Checked {
  harness::HostCase c;
  reference::Output ref;
  std::vector<double> naive;
};

Checked checked_case(const DecodeProblem& p, std::uint64_t seed) {
  harness::HostCase c = harness::make_case(p, seed);
  auto ref = reference::naive_attention(c.problem, c.tensors());
  auto naive = harness::naive_same_precision(c.problem, c.tensors());
  return {std::move(c), std::move(ref), std::move(naive)};
}

// Runs the plan on the emulator (outputs poisoned first); "" when accurate, else why not.
std::string run_and_check(EmulatedDevice& device, Checked& k, const Plan& plan,
                          const RunOptions& options = {}) {
  harness::poison_outputs(k.c);
  device.run(k.c.problem, plan, k.c.tensors(), options);
  const harness::Accuracy a = harness::check_accuracy(k.c, k.ref, true, &k.naive);
  if (a.ok()) return "";
  return "err " + std::to_string(a.max_abs_err) + " > tol " + std::to_string(a.tolerance) +
         ", lse err " + std::to_string(a.max_lse_err) + ", mismatches " +
         std::to_string(a.mismatches) + " (" + a.first_problem + ")";
}

// A fresh device per run: a new workspace (poisoned, counters zeroed), as for a first launch.
TEST(EmulatedKernel, EveryConfigurationStrategyAndLayoutAgainstTheReference) {
  for (const KernelInfo& k : emulated_kernels()) {
    // One pass with a partial tile; for 4 warp rows also two passes over the tokens.
    const std::vector<std::int32_t> groups =
        k.warps_m == 1 ? std::vector<std::int32_t>{5} : std::vector<std::int32_t>{17, 70};
    for (std::int32_t group : groups) {
      for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
        DecodeProblem p = make_problem({45, 0, 1, 17, 130}, group, 2, k);
        if (layout == KvLayout::paged) {
          p.layout = KvLayout::paged;
          p.page_size = 3 + group % 7;
        }
        ASSERT_EQ(kernel_for(p).name, k.name);
        Checked c = checked_case(p, static_cast<std::uint64_t>(k.head_dim * 100 + group));
        // 3 workers: ranges cross heads and requests; 8: most pairs split over several CTAs.
        const std::int32_t workers = layout == KvLayout::paged ? 8 : 3;
        for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
          const Plan plan =
              EmulatedDevice::plan(c.c.problem, workers, {.strategy = s, .tile_tokens = 16});
          EmulatedDevice device;
          RunOptions o;
          o.seed = static_cast<std::uint64_t>(group * 10 + static_cast<int>(s));
          EXPECT_EQ(run_and_check(device, c, plan, o), "")
              << k.name << " group " << group << " "
              << (layout == KvLayout::paged ? "paged" : "contiguous") << " " << strategy_name(s)
              << " workers " << workers;
        }
      }
    }
  }
}

}  // namespace
}  // namespace leanattn::emulator
