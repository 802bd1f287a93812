// ExecutorCache::Entry::plan_for: the last plan is reused for an equal problem and options, and
// made again when anything a plan depends on changes (seq_lens, q_len, the variant, heads, the
// dtypes, the strategy and every other plan option). An executor that counts its plan() calls
// shows which calls planned; the memo's plans are compared by content with fresh ones and run on
// fresh random data against the fp64 reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/executor_cache.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

// The CPU executor, counting the plans it makes.
class CountingExecutor final : public Executor {
 public:
  explicit CountingExecutor(std::int32_t workers)
      : inner_(make_executor("cpu", {.workers = workers})) {}

  std::string_view name() const override { return "counting"; }
  Memory memory() const override { return Memory::host; }
  std::string why_not(const DecodeProblem& p) const override { return inner_->why_not(p); }
  std::int32_t workers_for(const DecodeProblem& p) const override { return inner_->workers_for(p); }
  Plan plan(const DecodeProblem& p, const PlanOptions& o) const override {
    ++plans;
    return inner_->plan(p, o);
  }
  void run(const DecodeProblem& p, const Plan& plan, const DecodeTensors& t,
           void* stream) override {
    inner_->run(p, plan, t, stream);
  }
  std::unique_ptr<DecodeStep> make_step(const DecodeProblem& p, const PlanOptions& o,
                                        StepPlanning planning) override {
    return inner_->make_step(p, o, planning);
  }

  mutable int plans = 0;

 private:
  std::unique_ptr<Executor> inner_;
};

struct Call {
  DecodeProblem problem;
  PlanOptions options;
};

// A ragged batch with an empty request; capacities completed by make_case.
Call base_call() {
  DecodeProblem p = harness::test_problem({300, 0, 77}, 8, 2, 64, DType::f32);
  return {harness::make_case(p, 1).problem, {.tile_tokens = 16}};
}

class PlanMemoTest : public ::testing::Test {
 protected:
  PlanMemoTest() {
    auto executor = std::make_unique<CountingExecutor>(3);
    counting_ = executor.get();
    entry_ = std::make_unique<ExecutorCache::Entry>(std::move(executor));
  }

  // plan_for(call) under the entry's mutex, copied out.
  Plan memo(const Call& call) {
    const std::lock_guard<std::mutex> busy(entry_->busy());
    return entry_->plan_for(call.problem, call.options);
  }

  // The memo's plan for `call` runs on fresh random data (outputs poisoned) within the policy.
  void expect_runs(const Call& call, std::uint64_t seed) {
    harness::HostCase c = harness::make_case(call.problem, seed);
    ASSERT_EQ(c.problem, call.problem) << "make_case changed the problem";
    const reference::Output ref = reference::naive_attention(c.problem, c.tensors());
    harness::poison_outputs(c);
    const std::lock_guard<std::mutex> busy(entry_->busy());
    entry_->executor().run(c.problem, entry_->plan_for(call.problem, call.options), c.tensors());
    const harness::Accuracy a = harness::check_accuracy(c, ref, true);
    EXPECT_TRUE(a.ok()) << a.first_problem;
  }

  int plans() const { return counting_->plans; }

  CountingExecutor* counting_ = nullptr;
  std::unique_ptr<ExecutorCache::Entry> entry_;
  std::unique_ptr<Executor> fresh_ = make_executor("cpu", {.workers = 3});  // plans to compare
};

TEST_F(PlanMemoTest, AnEqualCallReusesThePlan) {
  const Call call = base_call();
  const Plan first = memo(call);
  EXPECT_EQ(plans(), 1);
  EXPECT_EQ(first, fresh_->plan(call.problem, call.options));
  const Call copy = base_call();  // equal by value, another object
  EXPECT_EQ(memo(copy), first);
  EXPECT_EQ(memo(call), first);
  EXPECT_EQ(plans(), 1);
  expect_runs(call, 2);
  EXPECT_EQ(plans(), 1);
}

// Each change: its name, and the edit of the base call. A changed problem gets its capacities
// from make_case again.
const std::vector<std::pair<std::string, std::function<void(Call&)>>>& changes() {
  static const std::vector<std::pair<std::string, std::function<void(Call&)>>> list = {
      {"seq_lens",
       [](Call& c) {
         c.problem.seq_lens = {300, 5, 77};
       }},
      {"seq_lens order",
       [](Call& c) {
         c.problem.seq_lens = {77, 0, 300};
       }},
      {"q_len", [](Call& c) { c.problem.q_len = 2; }},
      {"variant window", [](Call& c) { c.problem.variant.window_left = 40; }},
      {"variant softcap", [](Call& c) { c.problem.variant.softcap = 30.0f; }},
      {"q_heads", [](Call& c) { c.problem.q_heads = 4; }},
      {"kv_heads", [](Call& c) { c.problem.kv_heads = 4; }},
      {"head_dim", [](Call& c) { c.problem.head_dim = 32; }},
      {"dtypes", [](Call& c) { c.problem.q_dtype = c.problem.kv_dtype = DType::f16; }},
      {"strategy", [](Call& c) { c.options.strategy = Strategy::split; }},
      {"tile", [](Call& c) { c.options.tile_tokens = 32; }},
      {"order", [](Call& c) { c.options.order = LineOrder::head_major; }},
      {"splits", [](Call& c) { c.options = {.strategy = Strategy::split, .splits = 3}; }},
      {"batch_invariant", [](Call& c) { c.options.batch_invariant = true; }},
      {"chunk_tiles",
       [](Call& c) { c.options = {.tile_tokens = 16, .batch_invariant = true, .chunk_tiles = 2}; }},
  };
  return list;
}

TEST_F(PlanMemoTest, AnyChangePlansAgain) {
  const Call base = base_call();
  const Plan base_plan = memo(base);
  int expected_plans = 1;
  std::uint64_t seed = 10;
  for (const auto& [what, edit] : changes()) {
    Call changed = base;
    edit(changed);
    changed.problem.capacity = 0;
    changed.problem = harness::make_case(changed.problem, 1).problem;
    const Plan plan = memo(changed);
    EXPECT_EQ(plans(), ++expected_plans) << what << ": the last plan was reused";
    EXPECT_EQ(plan, fresh_->plan(changed.problem, changed.options)) << what;
    expect_runs(changed, ++seed);
    // Back to the base call: planned again, the same plan as at first.
    EXPECT_EQ(memo(base), base_plan) << what;
    EXPECT_EQ(plans(), ++expected_plans) << what;
  }
  // The changes the CPU's plans show (the dtypes and the chunk size of a one-chunk batch may not):
  for (const char* what : {"seq_lens", "q_len", "variant window", "variant softcap", "strategy"}) {
    for (const auto& [name, edit] : changes()) {
      if (name != what) continue;
      Call changed = base;
      edit(changed);
      EXPECT_NE(fresh_->plan(changed.problem, changed.options), base_plan) << what;
    }
  }
}

TEST_F(PlanMemoTest, AFailedPlanForgetsTheLastOne) {
  const Call base = base_call();
  const Plan first = memo(base);
  Call bad = base;
  bad.options.splits = 1000;  // more than kMaxSplits
  bad.options.strategy = Strategy::split;
  EXPECT_THROW(memo(bad), Error);
  EXPECT_EQ(plans(), 2);
  EXPECT_EQ(memo(base), first);
  EXPECT_EQ(plans(), 3);
}

}  // namespace
}  // namespace leanattn
