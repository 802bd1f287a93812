// Mixed steps through the executor seam (decode_step_cases.hpp): a DecodeStep made from a shape
// with a query_start_loc (mixed_step_shape: a static bound of query tokens) runs consecutive
// steps of different lengths and counts (decode rows, prefill chunks, requests of no query token,
// empty requests, fewer requests than the capacity) planned on the host or at run(), each within
// the fp64 policy, bitwise equal to a fresh run of the executor's plan of the same problem, rows
// past the step's query tokens left as they were; bad counts are refused naming query_start_loc
// and the rule. Executors without mixed steps refuse the shape by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "decode_step_cases.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/decode_step.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::step_tests {
namespace {

constexpr std::int32_t kMaxQueryTokens = 40;
const PlanOptions kMixedOptions = {
    .strategy = Strategy::lean, .order = LineOrder::head_major, .tile_tokens = 16};

// 5 requests of at most 200 tokens, bf16, 8 query heads over 2 KV heads, d 64; each request
// at most 24 query tokens, 40 in all.
DecodeProblem mixed_shape(KvLayout layout) {
  DecodeProblem p = harness::test_problem({200, 200, 200, 200, 200}, 8, 2, 64, DType::bf16);
  p.q_len = 24;
  if (layout == KvLayout::paged) {
    p.layout = KvLayout::paged;
    p.page_size = 16;
  }
  return mixed_step_shape(p, kMaxQueryTokens);
}

// One step's lengths and query counts (at most the capacity of each; the rest 0).
struct MixedStep {
  std::vector<std::int32_t> lens;
  std::vector<std::int32_t> counts;
};

const std::vector<MixedStep> kSteps = {
    {{50, 60, 200, 0, 3}, {1, 1, 1, 0, 1}},     // decode rows and an empty request
    {{30, 0, 120, 24, 9}, {24, 0, 5, 1, 9}},    // chunks beside a decode row, 39 tokens
    {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},         // nothing at all
    {{200, 7}, {20, 7}},                        // two requests of the capacity's five
    {{70, 130, 16, 1, 0}, {0, 24, 16, 0, 0}},   // requests with keys and no query token
    {{199, 200, 48, 33, 101}, {8, 8, 8, 8, 8}}  // every request a chunk, 40 tokens (the bound)
};

std::vector<std::int32_t> prefix_sums(const std::vector<std::int32_t>& counts) {
  std::vector<std::int32_t> loc = {0};
  for (std::int32_t n : counts) loc.push_back(loc.back() + n);
  return loc;
}

std::string accuracy(harness::HostCase& c) {
  const reference::Output ref = reference::naive_attention(c.problem, c.tensors());
  const harness::Accuracy a = harness::check_accuracy(c, ref, true);
  return a.ok() ? ""
                : "err " + std::to_string(a.max_abs_err) + " > tol " + std::to_string(a.tolerance) +
                      " (" + a.first_problem + ")";
}

// Whether out's and lse's rows from query token `from` on are the poisoned ones of `out`, `lse`.
bool rows_untouched(const harness::HostCase& c, std::int32_t from,
                    const std::vector<std::byte>& out, const std::vector<float>& lse) {
  const std::size_t out_row = c.out.size() / kMaxQueryTokens;
  const std::size_t lse_row = c.lse.size() / kMaxQueryTokens;
  return std::memcmp(c.out.data() + from * out_row, out.data() + from * out_row,
                     c.out.size() - from * out_row) == 0 &&
         std::memcmp(c.lse.data() + from * lse_row, lse.data() + from * lse_row,
                     (c.lse.size() - from * lse_row) * sizeof(float)) == 0;
}

TEST_P(DecodeStepSeam, MixedStepRunsConsecutiveStepsOfOwnCounts) {
  if (!GetParam().mixed_steps) GTEST_SKIP() << "mixed steps refused (MixedShapeSupportOrRefusal)";
  for (StepPlanning planning : {StepPlanning::host, StepPlanning::device}) {
    for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
      harness::HostCase c = harness::make_case(mixed_shape(layout), 17);
      const DecodeProblem shape = c.problem;  // the layout completed
      ASSERT_EQ(shape.total_queries(), kMaxQueryTokens);
      const std::unique_ptr<Executor> executor = GetParam().make();
      const std::unique_ptr<DecodeStep> step = executor->make_step(shape, kMixedOptions, planning);
      for (std::size_t i = 0; i < kSteps.size(); ++i) {
        const std::string what = std::string(step_planning_name(planning)) + " planning, " +
                                 (layout == KvLayout::paged ? "paged" : "contiguous") + " step " +
                                 std::to_string(i);
        const std::vector<std::int32_t> loc = prefix_sums(kSteps[i].counts);
        // The step's problem: the capacity's requests, those past the step's empty.
        c.problem.seq_lens = kSteps[i].lens;
        c.problem.seq_lens.resize(5, 0);
        c.problem.query_start_loc = loc;
        c.problem.query_start_loc.resize(6, loc.back());
        harness::poison_outputs(c);
        const std::vector<std::byte> poisoned_out = c.out;
        const std::vector<float> poisoned_lse = c.lse;
        if (planning == StepPlanning::host) {
          step->plan(kSteps[i].lens, loc, nullptr);  // maybe fewer than the capacity
          step->run(nullptr, c.tensors(), nullptr);
        } else {
          step->run(c.problem.seq_lens.data(), c.problem.query_start_loc.data(), c.tensors(),
                    nullptr);
        }
        EXPECT_EQ(accuracy(c), "") << what;
        EXPECT_TRUE(rows_untouched(c, loc.back(), poisoned_out, poisoned_lse))
            << what << ": rows past query_start_loc[-1] written";
        const std::vector<std::byte> out = c.out;
        const std::vector<float> lse = c.lse;
        harness::poison_outputs(c);
        executor->run(c.problem, executor->plan(c.problem, kMixedOptions), c.tensors());
        EXPECT_TRUE(out == c.out) << what << ": output differs from a fresh run of the same plan";
        EXPECT_EQ(std::memcmp(lse.data(), c.lse.data(), loc.back() * 8 * sizeof(float)), 0)
            << what << ": lse differs from a fresh run";
      }
    }
  }
}

// Counts and lengths a mixed step refuses, naming query_start_loc (or seq_lens) and the rule: a
// refused plan() keeps the last plan, a refused device-planned run() writes nothing.
TEST_P(DecodeStepSeam, MixedStepRefusesBadCountsByName) {
  if (!GetParam().mixed_steps) GTEST_SKIP() << "mixed steps refused (MixedShapeSupportOrRefusal)";
  harness::HostCase c = harness::make_case(mixed_shape(KvLayout::contiguous), 5);
  const DecodeProblem shape = c.problem;
  const std::unique_ptr<Executor> executor = GetParam().make();
  const std::vector<std::int32_t> lens = {50, 60, 200, 0, 30};
  const std::vector<std::int32_t> good = {0, 1, 6, 30, 30, 40};
  c.problem.seq_lens = lens;
  c.problem.query_start_loc = good;
  struct Bad {
    std::vector<std::int32_t> lens, loc;
    std::string message;  // the start of the refusal's
  };
  const std::vector<Bad> bad = {
      {lens, {0, 1, 6, 30, 30}, "query_start_loc: must have one more entry than seq_lens: 6"},
      {lens, {1, 1, 6, 30, 30, 40}, "query_start_loc: must start at 0 (got 1)"},
      {lens, {0, 3, 2, 30, 30, 40}, "query_start_loc: request 1 has -1 query tokens"},
      {lens,
       {0, 1, 26, 30, 30, 40},
       "query_start_loc: request 1 has 25 query tokens: must be "
       "non-decreasing with each count in [0, q_len 24]"},
      {lens,
       {0, 1, 6, 30, 30, 41},
       "query_start_loc: ends at 41 query tokens, past the step's "
       "max_query_tokens 40"},
      {{50, 4, 200, 0, 30},
       good,
       "seq_lens: request 1 has length 4: must be 0 or in [its query "
       "tokens 5, the step's bound 200]"},
      {{50, 60, 201, 0, 30}, good, "seq_lens: request 2 has length 201"},
  };
  for (StepPlanning planning : {StepPlanning::host, StepPlanning::device}) {
    const std::unique_ptr<DecodeStep> step = executor->make_step(shape, kMixedOptions, planning);
    if (planning == StepPlanning::host) step->plan(lens, good, nullptr);
    for (const Bad& b : bad) {
      const std::string what = std::string(step_planning_name(planning)) + ": " + b.message;
      harness::poison_outputs(c);
      const std::vector<std::byte> poisoned = c.out;
      std::string message;
      if (planning == StepPlanning::host) {
        message = thrown([&] { step->plan(b.lens, b.loc, nullptr); });
        step->run(nullptr, c.tensors(), nullptr);  // the last plan: good's
        EXPECT_EQ(accuracy(c), "") << what << ": the last plan was not kept";
      } else if (b.loc.size() == 6) {  // run() reads [capacity + 1] entries
        message = thrown([&] { step->run(b.lens.data(), b.loc.data(), c.tensors(), nullptr); });
        if (message.empty()) message = thrown([&] { step->check(nullptr); });
        EXPECT_TRUE(c.out == poisoned) << what << ": outputs written";
      } else {
        continue;
      }
      EXPECT_TRUE(starts_with(message, b.message)) << what << "; got: " << message;
    }
    // A mixed step takes a query_start_loc every step; a host-planned run() none.
    EXPECT_TRUE(starts_with(planning == StepPlanning::host
                                ? thrown([&] { step->plan(lens, nullptr); })
                                : thrown([&] { step->run(lens.data(), c.tensors(), nullptr); }),
                            "query_start_loc: must be given each step of a mixed step"));
    if (planning == StepPlanning::host) {
      EXPECT_TRUE(
          starts_with(thrown([&] { step->run(nullptr, good.data(), c.tensors(), nullptr); }),
                      "query_start_loc: must be null for a host-planned step"));
    }
  }
  // mixed_step_shape's bound of query tokens.
  DecodeProblem uniform = harness::test_problem({200, 200}, 8, 2, 64, DType::bf16);
  uniform.q_len = 4;
  EXPECT_EQ(mixed_step_shape(uniform, 6).query_start_loc, (std::vector<std::int32_t>{0, 4, 6}));
  EXPECT_TRUE(starts_with(thrown([&] { mixed_step_shape(uniform, 9); }),
                          "max_query_tokens: must be in [1, batch x q_len = 8] (got 9)"));
  EXPECT_TRUE(starts_with(thrown([&] { mixed_step_shape(uniform, 0); }), "max_query_tokens: "));
}

// A step of one q_len takes no query_start_loc; an executor without mixed steps refuses a mixed
// shape by name when the step is made.
TEST_P(DecodeStepSeam, MixedShapeSupportOrRefusal) {
  harness::HostCase c = harness::make_case(mixed_shape(KvLayout::contiguous), 3);
  const std::unique_ptr<Executor> executor = GetParam().make();
  DecodeProblem uniform = c.problem;
  uniform.query_start_loc.clear();
  const std::vector<std::int32_t> lens = {10, 20, 30, 40, 50};
  const std::vector<std::int32_t> loc = {0, 1, 2, 3, 4, 5};
  for (StepPlanning planning : {StepPlanning::host, StepPlanning::device}) {
    const std::unique_ptr<DecodeStep> step = executor->make_step(uniform, kMixedOptions, planning);
    const std::string message =
        planning == StepPlanning::host
            ? thrown([&] { step->plan(lens, loc, nullptr); })
            : thrown([&] { step->run(lens.data(), loc.data(), c.tensors(), nullptr); });
    EXPECT_TRUE(starts_with(message,
                            "query_start_loc: must be empty: the step's shape has one "
                            "q_len for every request"))
        << message;
    const std::string made =
        thrown([&] { executor->make_step(c.problem, kMixedOptions, planning); });
    if (GetParam().mixed_steps) {
      EXPECT_EQ(made, "");
    } else {
      EXPECT_TRUE(starts_with(made, "query_start_loc: ")) << made;
      EXPECT_NE(made.find("plans one q_len for every request"), std::string::npos) << made;
    }
  }
}

}  // namespace
}  // namespace leanattn::step_tests
