// The device planner (src/cuda/kernel/plan_kernel.cuh, issue 33) on the emulator: the plan it
// writes from the lengths alone equals the host planner's (make_plan, lean, head-major) for
// random batches (empty requests, padding at the end, a request longer than all others
// together, windows, more workers than tiles); and one captured step replays 20 length sets
// (growing, shrinking, all empty, one long request) on one workspace, each output bitwise equal
// to a fresh host-planned run of the same kernel and accurate against the fp64 reference; every
// dropped planner barrier is caught; lengths the host would refuse plan nothing and are reported.
// The host-planned step (src/cuda/device/fixed_plan.hpp: the host's plan copied into the same
// region) writes the same plan, replays the same way and refuses bad lengths by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "decode_step_cases.hpp"  // replay_lengths
#include "emulated_case.hpp"
#include "emulator/emulated_capture.hpp"
#include "emulator/launch.hpp"

namespace leanattn::emulator {
namespace {

// The host planner's plan in the device planner's terms.
DevicePlanView host_view(const Plan& plan) {
  DevicePlanView v;
  for (std::int64_t x : plan.worker_offsets)
    v.worker_offsets.push_back(static_cast<std::int32_t>(x));
  for (const Segment& s : plan.segments) {
    const KeyRange k = plan.tile_keys(s.request, s.tile_begin, s.tile_end);
    const bool split = s.kind != SegmentKind::direct;
    v.segments.push_back({s.request, s.kv_head, static_cast<std::int32_t>(k.begin),
                          static_cast<std::int32_t>(k.end), split ? s.slot : -1,
                          split ? s.reduction : -1});
  }
  for (const Reduction& r : plan.reductions) {
    v.reductions.push_back({r.request, r.kv_head, r.slot_begin, r.num_slots});
  }
  v.num_slots = plan.num_slots;
  v.total_tiles = plan.total_tiles;
  return v;
}

std::string differs(const DevicePlanView& got, const DevicePlanView& want) {
  if (got.worker_offsets != want.worker_offsets) return "worker_offsets";
  if (got.segments.size() != want.segments.size()) return "segment count";
  for (std::size_t i = 0; i < got.segments.size(); ++i) {
    if (got.segments[i] != want.segments[i]) return "segment " + std::to_string(i);
  }
  if (got.reductions != want.reductions) return "reductions";
  if (got.num_slots != want.num_slots) return "num_slots";
  if (got.total_tiles != want.total_tiles) return "total_tiles";
  return "";
}

// The lengths a serving loop hands a host-planned step: up to the last nonzero one (the step
// gives the rest of its capacity length 0).
std::span<const std::int32_t> up_to_last_nonzero(const std::vector<std::int32_t>& lens) {
  std::size_t n = lens.size();
  while (n > 0 && lens[n - 1] == 0) --n;
  return std::span<const std::int32_t>(lens).first(n);
}

RunOptions seeded(std::uint64_t seed) {
  RunOptions o;
  o.seed = seed;
  return o;
}

std::string describe(const DecodeProblem& p, std::int32_t workers, std::int32_t tile) {
  std::string s = "kv_heads " + std::to_string(p.kv_heads) + " q_len " + std::to_string(p.q_len) +
                  " window " + std::to_string(p.variant.window_left) + " workers " +
                  std::to_string(workers) + " tile " + std::to_string(tile) + " lens";
  for (std::int32_t x : p.seq_lens) s += " " + std::to_string(x);
  return s;
}

TEST(DevicePlanner, PlansEqualTheHostPlannersForRandomBatches) {
  std::mt19937_64 rng(33);
  auto pick = [&](std::initializer_list<std::int32_t> xs) {
    return *(xs.begin() + static_cast<std::ptrdiff_t>(rng() % xs.size()));
  };
  for (int trial = 0; trial < 300; ++trial) {
    const std::int32_t batch = 1 + static_cast<std::int32_t>(rng() % 40);
    std::vector<std::int32_t> lens(static_cast<std::size_t>(batch));
    for (std::int32_t& x : lens) x = rng() % 4 == 0 ? 0 : static_cast<std::int32_t>(rng() % 700);
    if (trial % 5 == 1) {  // one request longer than all the others together
      std::int32_t sum = 0;
      for (std::int32_t x : lens) sum += x;
      lens[rng() % lens.size()] = sum + 1 + static_cast<std::int32_t>(rng() % 5000);
    }
    if (trial % 7 == 2) std::fill(lens.begin(), lens.end(), 0);  // nothing to do
    if (trial % 3 == 0) {  // padding: requests past the step's batch at 0
      std::fill(lens.begin() + static_cast<std::ptrdiff_t>(rng() % lens.size()), lens.end(), 0);
    }
    const std::int32_t kv_heads = pick({1, 2, 3, 8});
    const std::int32_t q_len = pick({1, 1, 2, 4});
    for (std::int32_t& x : lens) x = x == 0 ? 0 : std::max(x, q_len);  // the new tokens fit
    DecodeProblem p = harness::test_problem(lens, kv_heads * 2, kv_heads, 64, DType::f16);
    p.q_len = q_len;
    if (trial % 4 == 3) p.variant.window_left = static_cast<std::int32_t>(rng() % 300);
    const std::int32_t workers = pick({1, 2, 3, 7, 16, 132, 300, 1000});
    const std::int32_t tile = pick({1, 16, 16, 64, 256});
    const Plan plan =
        EmulatedDevice::plan(p, workers, {.strategy = Strategy::lean, .tile_tokens = tile});
    EmulatedCapturedStep step(p, workers, tile);
    std::copy(lens.begin(), lens.end(), step.seq_lens().begin());
    step.plan_only(seeded(static_cast<std::uint64_t>(trial)));
    EXPECT_EQ(differs(step.plan(), host_view(plan)), "") << describe(p, workers, tile);
    // The host-planned step's region (a fresh one: nothing left by the planner), given the
    // lengths up to the last nonzero one.
    EmulatedCapturedStep host(p, workers, tile);
    host.plan_on_host(up_to_last_nonzero(lens));
    EXPECT_EQ(differs(host.plan(), host_view(plan)), "")
        << "host-planned, " << describe(p, workers, tile);
  }
}

// Every barrier of the planner matters: with any one dropped, some seed gives a plan unlike the
// host planner's, a failed launch, or a refused length that goes unreported.
TEST(DevicePlanner, EveryDroppedBarrierIsCaught) {
  std::vector<std::int32_t> lens(300);
  for (std::size_t b = 0; b < lens.size(); ++b) lens[b] = static_cast<std::int32_t>((b * 37) % 500);
  const DecodeProblem p = harness::test_problem(lens, 4, 2, 64, DType::f16);
  const std::int32_t workers = 700;
  const Plan plan =
      EmulatedDevice::plan(p, workers, {.strategy = Strategy::lean, .tile_tokens = 16});
  EmulatedCapturedStep step(p, workers, 16);
  clear_call_sites();
  std::copy(lens.begin(), lens.end(), step.seq_lens().begin());
  step.plan_only();
  ASSERT_EQ(differs(step.plan(), host_view(plan)), "");
  std::vector<std::string> sites;
  for (const std::string& site : call_sites().barriers) {
    if (site.find("plan_kernel") != std::string::npos) sites.push_back(site);
  }
  ASSERT_EQ(sites.size(), 6u);  // every __syncthreads of plan_kernel.cuh
  for (const std::string& site : sites) {
    bool caught = false;
    for (std::uint64_t seed = 1; seed <= 4 && !caught; ++seed) {
      RunOptions o = seeded(seed);
      o.mutations.drop_barrier = site;
      try {
        // The scratch first holds another batch's values, so that a read before its write
        // cannot see the right value left by an earlier run.
        for (std::size_t b = 0; b < lens.size(); ++b) {
          step.seq_lens()[b] = static_cast<std::int32_t>((b * 53 + seed) % 500);
        }
        step.plan_only();
        std::copy(lens.begin(), lens.end(), step.seq_lens().begin());
        step.plan_only(o);
        caught = differs(step.plan(), host_view(plan)) != "";
        step.seq_lens()[299] = 501;  // past the bound: must be refused
        try {
          step.check();  // clears the sticky word
        } catch (const Error&) {
        }
        step.plan_only(o);
        caught = caught || step.plan().refused != 300;
      } catch (const Error&) {
        caught = true;  // a failed launch
      }
    }
    EXPECT_TRUE(caught) << "dropping " << site << " went unnoticed";
  }
}

// The worked example of src/cuda/common/lean_line.hpp.
TEST(DevicePlanner, TheWorkedExample) {
  DecodeProblem p = harness::test_problem({40, 0, 70}, 2, 1, 64, DType::f16);
  EmulatedCapturedStep step(p, 3, 16);
  std::copy(p.seq_lens.begin(), p.seq_lens.end(), step.seq_lens().begin());
  step.plan_only();
  const DevicePlanView v = step.plan();
  EXPECT_EQ(v.worker_offsets, (std::vector<std::int32_t>{0, 1, 4, 5}));
  using S = std::array<std::int32_t, 6>;
  EXPECT_EQ(v.segments, (std::vector<S>{{0, 0, 0, 32, 0, 0},
                                        {0, 0, 32, 40, 1, 0},
                                        {1, 0, 0, 0, -1, -1},
                                        {2, 0, 0, 32, 2, 1},
                                        {2, 0, 32, 70, 3, 1}}));
  using R = std::array<std::int32_t, 4>;
  EXPECT_EQ(v.reductions, (std::vector<R>{{0, 0, 0, 2}, {2, 0, 2, 2}}));
  EXPECT_EQ(v.num_slots, 4);
}

enum class Planning { device, host };

// 20 length sets on a contiguous cache, planned on the device from the "device" lengths (then
// the first 8 again on a paged one, pages of 16), or on the host and copied in (the lengths given
// up to the last nonzero one, the rest of the capacity 0; contiguous only: the region and the
// decode launch over it are the device-planned step's).
void replay_twenty_length_sets(Planning planning) {
  for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
    if (planning == Planning::host && layout == KvLayout::paged) continue;
    const KernelInfo k = kernel_named("bf16_d64_wm1");
    DecodeProblem shape = make_problem({200, 200, 200, 200, 200}, 4, 2, k);
    if (layout == KvLayout::paged) {
      shape.layout = KvLayout::paged;
      shape.page_size = 16;
    }
    Checked c = checked_case(shape, 91);  // its problem: the layout completed (capacity, pages)
    const std::int32_t workers = 7, tile = 16;
    EmulatedCapturedStep step(c.c.problem, workers, tile);
    std::mt19937_64 rng(5);
    const int replays = layout == KvLayout::paged ? 8 : 20;
    for (int i = 0; i < replays; ++i) {
      const std::vector<std::int32_t> lens = step_tests::replay_lengths(i, rng);
      c.c.problem.seq_lens = lens;
      c.ref = reference::naive_attention(c.c.problem, c.c.tensors());
      c.naive = harness::naive_same_precision(c.c.problem, c.c.tensors());
      const std::string what = std::string(layout == KvLayout::paged ? "paged" : "contiguous") +
                               " replay " + std::to_string(i);
      // The captured step, then a fresh host-planned run of the same plan: bitwise equal.
      harness::poison_outputs(c.c);
      if (planning == Planning::device) {
        std::copy(lens.begin(), lens.end(), step.seq_lens().begin());
        step.replay(c.c.tensors(), seeded(static_cast<std::uint64_t>(i)));
      } else {
        step.plan_on_host(up_to_last_nonzero(lens));
        step.replay_decode(c.c.tensors(), seeded(static_cast<std::uint64_t>(i)));
      }
      EXPECT_EQ(verdict(c), "") << what;
      const std::vector<std::byte> out = c.c.out;
      const std::vector<float> lse = c.c.lse;
      const Plan plan = EmulatedDevice::plan(c.c.problem, workers,
                                             {.strategy = Strategy::lean, .tile_tokens = tile});
      EXPECT_EQ(differs(step.plan(), host_view(plan)), "") << what;
      EmulatedDevice fresh;
      EXPECT_EQ(run_and_check(fresh, c, plan, seeded(100u + static_cast<std::uint64_t>(i))), "")
          << what;
      EXPECT_TRUE(out == c.c.out) << what << ": output differs from the host-planned run";
      EXPECT_TRUE(std::equal(lse.begin(), lse.end(), c.c.lse.begin(), c.c.lse.end(),
                             [](float a, float b) {
                               return std::bit_cast<std::uint32_t>(a) ==
                                      std::bit_cast<std::uint32_t>(b);
                             }))
          << what << ": lse differs from the host-planned run";
    }
  }
}

TEST(DevicePlanner, OneCaptureReplaysTwentyLengthSets) {
  replay_twenty_length_sets(Planning::device);
}

TEST(HostPlannedStep, OneCaptureReplaysTwentyLengthSets) {
  replay_twenty_length_sets(Planning::host);
}

// A length the host would refuse (past the capture's capacity, negative, or below q_len), which
// only the device sees: the planner plans no work, the decode kernel (launched all the same, as
// on a GPU) leaves the outputs as they were, and the sticky word names the request at the next
// check, even after a good replay in between.
TEST(DevicePlanner, RefusesLengthsPastTheCapture) {
  const KernelInfo k = kernel_named("bf16_d64_wm1");
  DecodeProblem shape = make_problem({100, 100, 100}, 4, 2, k);
  shape.q_len = 3;
  Checked c = checked_case(shape, 3);
  EmulatedCapturedStep step(c.c.problem, 3, 16);
  for (std::int32_t bad : {101, -1, 2}) {
    step.seq_lens()[0] = 50;
    step.seq_lens()[1] = bad;
    step.seq_lens()[2] = 100;
    harness::poison_outputs(c.c);
    const std::vector<std::byte> poisoned = c.c.out;
    step.replay(c.c.tensors());
    const DevicePlanView v = step.plan();
    EXPECT_EQ(v.refused, 2) << bad;
    EXPECT_EQ(v.worker_offsets, (std::vector<std::int32_t>{0, 0, 0, 0})) << bad;
    EXPECT_TRUE(c.c.out == poisoned) << "a length of " << bad << " wrote outputs";
    step.seq_lens()[1] = 60;  // a good replay: the refusal stays on record
    step.replay(c.c.tensors());
    try {
      step.check();
      ADD_FAILURE() << "a length of " << bad << " went unreported";
    } catch (const Error& e) {
      EXPECT_EQ(
          std::string(e.what()).rfind("seq_lens: request 1 of a replay since the last check", 0),
          0u)
          << e.what();
    }
    EXPECT_NO_THROW(step.check());  // cleared
  }
}

// The host sees the lengths: one out of range is refused by name before anything is copied, and
// the region keeps the previous step's plan (the next replay recomputes it).
TEST(HostPlannedStep, RefusesLengthsByName) {
  const KernelInfo k = kernel_named("bf16_d64_wm1");
  DecodeProblem shape = make_problem({100, 100, 100}, 4, 2, k);
  shape.q_len = 3;
  Checked c = checked_case(shape, 4);
  EmulatedCapturedStep step(c.c.problem, 3, 16);
  const std::vector<std::int32_t> good = {50, 60, 100};
  step.plan_on_host(good);
  const DevicePlanView before = step.plan();
  const std::vector<std::pair<std::vector<std::int32_t>, std::string>> cases = {
      {{50, 101, 100},
       "seq_lens: request 1 has length 101: must be 0 or in [q_len 3, the step's "
       "bound 100]"},
      {{50, -1}, "seq_lens: request 1 has length -1"},
      {{50, 2}, "seq_lens: request 1 has length 2"},
      {{1, 1, 1, 1}, "seq_lens: has 4 lengths, more than the step's batch capacity 3"}};
  for (const auto& [lens, message] : cases) {
    try {
      step.plan_on_host(lens);
      ADD_FAILURE() << message << ": not refused";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
    EXPECT_EQ(differs(step.plan(), before), "") << message << ": the region changed";
  }
  c.c.problem.seq_lens = good;
  c.ref = reference::naive_attention(c.c.problem, c.c.tensors());
  c.naive = harness::naive_same_precision(c.c.problem, c.c.tensors());
  harness::poison_outputs(c.c);
  step.replay_decode(c.c.tensors());
  EXPECT_EQ(verdict(c), "");
}

}  // namespace
}  // namespace leanattn::emulator
