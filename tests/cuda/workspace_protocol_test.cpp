// The CUDA engine's workspace protocol, simulated on the CPU: plans of different shapes and
// strategies run in turn on one workspace buffer, with the engine's own bookkeeping
// (WorkspaceRegistry: what to zero before a launch) and the kernel's slot writes, ticket
// increments, last-arriver merges and resets emulated (kernel_emulator.hpp) in random arrival
// orders on that buffer, each result against the fp64 reference. This is what a serving loop
// does (the plan changes every decode step) and what the GPU tests OneWorkspaceServesDifferent-
// PlansInTurn and PagedCachesWithShuffledBlockTables do. Also: the layout's invariants, and the
// registry's rules for captures and new allocations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "harness/test_problem.hpp"
#include "kernel_emulator.hpp"
#include "leanattn/error.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda {
namespace {

struct Case {
  harness::HostCase c;
  reference::Output ref;
  harness::NaiveBaseline naive;
  KernelHandle kernel;
};

Case make(std::vector<std::int32_t> lens, std::int32_t q_heads, std::int32_t kv_heads,
          std::uint64_t seed) {
  const KernelHandle& k = compiled_kernels().front();
  harness::HostCase c = harness::make_case(
      harness::test_problem(std::move(lens), q_heads, kv_heads, k.head_dim, k.dtype), seed);
  reference::Output ref = reference::naive_attention(c.problem, c.tensors());
  harness::NaiveBaseline naive = harness::naive_same_precision(c.problem, c.tensors());
  const KernelHandle* found = find_kernel(c.problem);
  return {std::move(c), std::move(ref), std::move(naive), found != nullptr ? *found : k};
}

// A host buffer standing for one device allocation (64-byte aligned).
struct Buffer {
  std::vector<std::byte> bytes;
  explicit Buffer(std::size_t n) : bytes(n + 64) {}
  std::byte* data() {
    auto p = reinterpret_cast<std::uintptr_t>(bytes.data());
    return bytes.data() + (64 - p % 64) % 64;
  }
};

TEST(WorkspaceProtocol, PlansOfDifferentShapesTakeTurnsOnOneWorkspace) {
  std::vector<Case> cases;
  cases.push_back(make({700, 33, 0, 260}, 8, 2, 1));
  cases.push_back(make({1500}, 4, 1, 2));
  cases.push_back(make({90, 400, 17}, 6, 3, 3));
  struct Run {
    std::size_t c;
    Plan plan;
  };
  std::vector<Run> plans;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      for (std::int32_t workers : {3, 11, 40}) {
        PlanOptions o{.strategy = s, .tile_tokens = 32};
        if (s == Strategy::lean) o.order = LineOrder::head_major;
        plans.push_back({i, make_plan(cases[i].c.problem, {workers}, o)});
      }
    }
  }
  std::int64_t most = 0;
  for (const Run& r : plans) most = std::max(most, device_workspace_layout(r.plan).bytes);
  Buffer buffer(static_cast<std::size_t>(most));
  std::memset(buffer.data(), 0x5a, static_cast<std::size_t>(most));  // a fresh allocation
  WorkspaceRegistry registry;
  std::mt19937 rng(13);
  int failures = 0;
  for (int step = 0; step < 60; ++step) {
    // Every plan once in a random order, then random plans (so each shape follows others).
    const Run& r =
        step < static_cast<int>(plans.size())
            ? plans[static_cast<std::size_t>(step)]
            : plans[std::uniform_int_distribution<std::size_t>(0, plans.size() - 1)(rng)];
    Case& k = cases[r.c];
    if (auto z = registry.before_run(r.plan, buffer.data(), nullptr, false)) {
      std::memset(z->begin, 0, z->bytes);  // the engine's cudaMemsetAsync
    }
    std::vector<std::int32_t> order(static_cast<std::size_t>(r.plan.workers));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const WorkspacePointers ws = workspace_pointers(r.plan, buffer.data());
    harness::poison_outputs(k.c);
    const testing::EmulationResult e =
        testing::emulate_kernel(k.c.problem, r.plan, k.c.tensors(), k.kernel, order, &ws);
    const harness::Accuracy a = harness::check_accuracy(k.c, k.ref, true, &k.naive);
    const std::string what = "step " + std::to_string(step) + ": case " + std::to_string(r.c) +
                             " " + std::string(strategy_name(r.plan.strategy)) + " workers " +
                             std::to_string(r.plan.workers) + ", " +
                             std::to_string(r.plan.reductions.size()) + " split pairs";
    EXPECT_TRUE(a.ok()) << what << ": err " << a.max_abs_err << " > tol " << a.tolerance
                        << ", mismatches " << a.mismatches << " (" << a.first_problem << ")";
    EXPECT_EQ(e.merges, static_cast<std::int64_t>(r.plan.reductions.size())) << what;
    EXPECT_TRUE(std::all_of(e.counters.begin(), e.counters.end(), [](auto x) { return x == 0u; }))
        << what << ": counters not left at 0";
    failures += a.ok() ? 0 : 1;
  }
  EXPECT_EQ(failures, 0) << "of 60 runs";
}

Plan split_plan(std::int32_t workers) {
  return make_plan(harness::test_problem({300, 40}, 8, 2, 64), {workers},
                   {.order = LineOrder::head_major, .tile_tokens = 16});
}

TEST(WorkspaceLayout, CountersSitAtAFixedPlaceBeforeTheSlots) {
  const WorkspaceLayout first = device_workspace_layout(split_plan(3));
  for (std::int32_t workers : {1, 2, 3, 7, 30, 200}) {
    const Plan plan = split_plan(workers);
    const WorkspaceLayout w = device_workspace_layout(plan);
    if (plan.reductions.empty()) {
      EXPECT_EQ(w.bytes, 0);
      continue;
    }
    // The counters' place and size do not depend on the plan, so no plan's slots overlap
    // another plan's counters on a shared workspace.
    EXPECT_EQ(w.counters_offset, first.counters_offset);
    EXPECT_EQ(w.o_offset, first.o_offset);
    EXPECT_EQ(w.counters_offset, 0);
    EXPECT_GE(w.o_offset, kWorkspaceCounters * 4);
    EXPECT_GE(kWorkspaceCounters, static_cast<std::int64_t>(plan.reductions.size()));
    const std::int64_t rows = static_cast<std::int64_t>(plan.num_slots) * plan.group_size;
    EXPECT_LE(w.o_offset + rows * plan.head_dim * 4, w.m_offset);
    EXPECT_LE(w.m_offset + rows * 4, w.l_offset);
    EXPECT_LE(w.l_offset + rows * 4, w.bytes);
    for (std::int64_t at : {w.o_offset, w.m_offset, w.l_offset, w.bytes}) EXPECT_EQ(at % 64, 0);
  }
}

TEST(WorkspaceRegistry, ZeroesOncePerAllocationAndNotInsideACapture) {
  const Plan small = split_plan(3);
  const Plan large = split_plan(30);
  ASSERT_FALSE(small.reductions.empty());
  Buffer buffer(static_cast<std::size_t>(device_workspace_layout(large).bytes));
  WorkspaceRegistry r;
  // A capture records the zeroing into the graph: not done for eager launches.
  const auto captured = r.before_run(small, buffer.data(), nullptr, true);
  ASSERT_TRUE(captured.has_value());
  EXPECT_EQ(captured->begin, buffer.data());
  EXPECT_EQ(captured->bytes, static_cast<std::size_t>(kWorkspaceCounters) * 4);
  EXPECT_EQ(r.size(), 0u);
  ASSERT_TRUE(r.before_run(small, buffer.data(), nullptr, false).has_value());
  EXPECT_FALSE(r.before_run(small, buffer.data(), nullptr, false).has_value());
  EXPECT_FALSE(r.before_run(large, buffer.data(), nullptr, false).has_value())
      << "once per allocation";
  // No split pair: nothing to zero; no workspace needed.
  EXPECT_FALSE(r.before_run(split_plan(1), buffer.data(), nullptr, false).has_value());
  // A second stream is refused: the launches would share tickets and slots.
  int other_stream = 0;
  EXPECT_THROW(r.before_run(small, buffer.data(), &other_stream, false), Error);
  // A new allocation overlapping the old one: forgotten, zeroed again.
  r.forget(buffer.data() + 128, 64);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_TRUE(r.before_run(large, buffer.data(), nullptr, false).has_value());
}

}  // namespace
}  // namespace leanattn::cuda
