// DecodeStep through the executor seam, one body for every executor (decode_step_cases.hpp): one
// step replays up to 20 length sets (growing, shrinking, all empty, one long request, random) on a
// contiguous and a paged cache, planned on the host (plan()) or from the lengths run() is given,
// each output within the fp64 policy and bitwise equal to a fresh run of the executor's own plan
// of the same lengths; bad lengths are refused by name and write nothing (the CPU throws at
// once, a GPU's planner reports them at check()); misuse of plan() and run() is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "decode_step_cases.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/decode_step.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::step_tests {
namespace {

constexpr std::int32_t kTile = 16;
const PlanOptions kOptions = {
    .strategy = Strategy::lean, .order = LineOrder::head_major, .tile_tokens = kTile};

// 5 requests of at most 200 tokens, bf16, 4 query heads over 2 KV heads, d 64 (a configuration
// every build of the CUDA kernel's table has).
DecodeProblem step_shape(KvLayout layout, std::int32_t q_len = 1) {
  DecodeProblem p = harness::test_problem({200, 200, 200, 200, 200}, 4, 2, 64, DType::bf16);
  p.q_len = q_len;
  if (layout == KvLayout::paged) {
    p.layout = KvLayout::paged;
    p.page_size = 16;
  }
  return p;
}

std::string accuracy(harness::HostCase& c) {
  const reference::Output ref = reference::naive_attention(c.problem, c.tensors());
  const harness::NaiveBaseline naive = harness::naive_same_precision(c.problem, c.tensors());
  const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
  return a.ok() ? ""
                : "err " + std::to_string(a.max_abs_err) + " > tol " + std::to_string(a.tolerance) +
                      " (" + a.first_problem + ")";
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](float x, float y) {
    return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
  });
}

TEST(StepPlanning, NamesAndRefusals) {
  EXPECT_EQ(parse_step_planning("host"), StepPlanning::host);
  EXPECT_EQ(parse_step_planning("device"), StepPlanning::device);
  EXPECT_EQ(step_planning_name(StepPlanning::device), "device");
  EXPECT_EQ(thrown([] { parse_step_planning("graph"); }),
            "planning: must be 'host' or 'device' (got 'graph')");
}

TEST_P(DecodeStepSeam, OneStepReplaysTwentyLengthSets) {
  for (StepPlanning planning : {StepPlanning::host, StepPlanning::device}) {
    for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
      harness::HostCase c = harness::make_case(step_shape(layout), 91);
      const DecodeProblem shape = c.problem;  // the layout completed (capacity, pages)
      const std::unique_ptr<Executor> executor = GetParam().make();
      const std::unique_ptr<DecodeStep> step = executor->make_step(shape, kOptions, planning);
      EXPECT_EQ(step->planning(), planning);
      std::mt19937_64 rng(5);
      const int replays =
          layout == KvLayout::paged ? std::max(3, GetParam().replays * 2 / 5) : GetParam().replays;
      for (int i = 0; i < replays; ++i) {
        const std::vector<std::int32_t> lens = replay_lengths(i, rng);
        const std::string what = std::string(step_planning_name(planning)) + " planning, " +
                                 (layout == KvLayout::paged ? "paged" : "contiguous") + " replay " +
                                 std::to_string(i);
        c.problem.seq_lens = lens;
        harness::poison_outputs(c);
        if (planning == StepPlanning::host) {
          // Fewer lengths than the capacity: the rest are 0.
          const auto used = std::find_if(lens.rbegin(), lens.rend(), [](int x) { return x; });
          step->plan(std::span(lens.data(), static_cast<std::size_t>(lens.rend() - used)), nullptr);
          step->run(nullptr, c.tensors(), nullptr);
        } else {
          step->run(lens.data(), c.tensors(), nullptr);
          step->check(nullptr);
        }
        EXPECT_EQ(accuracy(c), "") << what;
        const std::vector<std::byte> out = c.out;
        const std::vector<float> lse = c.lse;
        harness::poison_outputs(c);
        executor->run(c.problem, executor->plan(c.problem, kOptions), c.tensors());
        EXPECT_TRUE(out == c.out) << what << ": output differs from a fresh run of the same plan";
        EXPECT_TRUE(same_bits(lse, c.lse)) << what << ": lse differs from a fresh run";
      }
    }
  }
}

// Lengths the step's bounds refuse (past the bound, negative, in [1, q_len), more than the
// capacity): refused naming seq_lens. Device planning writes nothing; host planning keeps the
// last plan, which the next run computes.
TEST_P(DecodeStepSeam, RefusesLengthsOutsideItsBounds) {
  harness::HostCase c = harness::make_case(step_shape(KvLayout::contiguous, 3), 4);
  const DecodeProblem shape = c.problem;
  const std::unique_ptr<Executor> executor = GetParam().make();
  const std::vector<std::vector<std::int32_t>> bad = {
      {50, 201, 100, 0, 0}, {50, -1, 100, 0, 0}, {50, 2, 100, 0, 0}};
  const std::vector<std::int32_t> good = {50, 60, 200, 0, 3};
  c.problem.seq_lens = good;
  for (StepPlanning planning : {StepPlanning::host, StepPlanning::device}) {
    const std::unique_ptr<DecodeStep> step = executor->make_step(shape, kOptions, planning);
    if (planning == StepPlanning::host) step->plan(good, nullptr);
    for (const std::vector<std::int32_t>& lens : bad) {
      const std::string what = std::string(step_planning_name(planning)) + " planning, length " +
                               std::to_string(lens[1]);
      harness::poison_outputs(c);
      const std::vector<std::byte> poisoned = c.out;
      std::string message;
      if (planning == StepPlanning::host) {
        message = thrown([&] { step->plan(lens, nullptr); });
        step->run(nullptr, c.tensors(), nullptr);  // the last plan: good's
        EXPECT_EQ(accuracy(c), "") << what << ": the last plan was not kept";
      } else {
        message = thrown([&] { step->run(lens.data(), c.tensors(), nullptr); });
        if (message.empty()) message = thrown([&] { step->check(nullptr); });  // a GPU's planner
        EXPECT_TRUE(c.out == poisoned) << what << ": outputs written";
      }
      EXPECT_TRUE(starts_with(message, "seq_lens: request 1 ")) << what << ": " << message;
      EXPECT_EQ(thrown([&] { step->check(nullptr); }), "") << what << ": reported twice";
    }
    if (planning == StepPlanning::host) {
      EXPECT_TRUE(starts_with(thrown([&] { step->plan(std::vector<std::int32_t>(6, 1), nullptr); }),
                              "seq_lens: has 6 lengths, more than the step's batch capacity 5"));
    } else {
      harness::poison_outputs(c);
      step->run(good.data(), c.tensors(), nullptr);
      EXPECT_EQ(accuracy(c), "") << "device planning after refusals";
    }
  }
}

// plan() belongs to host planning, the lengths of run() to device planning; a host-planned step
// with no plan yet writes nothing.
TEST_P(DecodeStepSeam, RefusesMisuseByName) {
  harness::HostCase c = harness::make_case(step_shape(KvLayout::contiguous), 8);
  const std::unique_ptr<Executor> executor = GetParam().make();
  const std::vector<std::int32_t> lens = {10, 20, 30, 40, 50};
  const std::unique_ptr<DecodeStep> device =
      executor->make_step(c.problem, kOptions, StepPlanning::device);
  EXPECT_TRUE(starts_with(thrown([&] { device->plan(lens, nullptr); }), "planning: is 'device'"));
  EXPECT_TRUE(
      starts_with(thrown([&] { device->run(nullptr, c.tensors(), nullptr); }), "seq_lens: "));
  const std::unique_ptr<DecodeStep> host =
      executor->make_step(c.problem, kOptions, StepPlanning::host);
  harness::poison_outputs(c);
  const std::vector<std::byte> poisoned = c.out;
  host->run(nullptr, c.tensors(), nullptr);
  EXPECT_TRUE(c.out == poisoned) << "a host-planned step wrote outputs before any plan()";
  EXPECT_TRUE(starts_with(thrown([&] { host->run(lens.data(), c.tensors(), nullptr); }),
                          "seq_lens: must be null for a host-planned step"));
  EXPECT_GT(host->workers(), 0);
  EXPECT_EQ(host->tile_tokens(), kTile);
  // Options are checked when the step is made.
  EXPECT_TRUE(starts_with(thrown([&] {
                            executor->make_step(c.problem, {.tile_tokens = 1 << 17},
                                                StepPlanning::device);
                          }),
                          "tile: "));
}

}  // namespace
}  // namespace leanattn::step_tests
