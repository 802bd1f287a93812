// Every validation rule of DecodeProblem, DecodeTensors and the plan options throws an Error that
// names the argument it is about.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn {
namespace {

DecodeProblem good_problem() {
  DecodeProblem p = harness::test_problem({5, 0, 17}, 8, 2, 64);
  p.capacity = 20;  // above the longest request
  return p;
}

// An edit to the paged layout with these sizes.
std::function<void(DecodeProblem&)> paged(std::int32_t page_size, std::int64_t num_pages,
                                          std::int32_t max_pages) {
  return [=](DecodeProblem& p) {
    p.layout = KvLayout::paged;
    p.page_size = page_size;
    p.num_pages = num_pages;
    p.max_pages = max_pages;
  };
}

// Expects `fn` to throw Error whose argument is `argument` and whose message contains `words`.
void expect_error(const std::function<void()>& fn, const std::string& argument,
                  const std::string& words) {
  try {
    fn();
    ADD_FAILURE() << "no error for " << argument;
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

void expect_problem_error(const std::function<void(DecodeProblem&)>& edit,
                          const std::string& argument, const std::string& words) {
  DecodeProblem p = good_problem();
  edit(p);
  expect_error([&] { validate(p); }, argument, words);
}

TEST(Validation, GoodProblemPasses) {
  EXPECT_NO_THROW(validate(good_problem()));
}

TEST(Validation, ProblemRules) {
  expect_problem_error([](auto& p) { p.kv_heads = 0; }, "kv_heads", "must be in [1");
  expect_problem_error([](auto& p) { p.q_heads = -1; }, "q_heads", "must be in [1");
  expect_problem_error([](auto& p) { p.q_heads = 7; }, "q_heads", "multiple of kv_heads");
  expect_problem_error([](auto& p) { p.head_dim = 0; }, "head_dim", "multiple of 16");
  expect_problem_error([](auto& p) { p.head_dim = 72; }, "head_dim", "(got 72)");
  expect_problem_error([](auto& p) { p.head_dim = 592; }, "head_dim", "in [16, 576] (got 592)");
  expect_problem_error([](auto& p) { p.head_dim_v = p.head_dim + 16; }, "head_dim_v",
                       "in [16, head_dim = ");
  expect_problem_error([](auto& p) { p.head_dim_v = 24; }, "head_dim_v", "(got 24)");
  expect_problem_error([](auto& p) { p.head_dim_v = -16; }, "head_dim_v", "(got -16)");
  expect_problem_error([](auto& p) { p.q_len = 0; }, "q_len", "must be in [1, 8192]");
  expect_problem_error([](auto& p) { p.q_len = 6; }, "seq_lens", "seq_lens[0] = 5");
  expect_problem_error([](auto& p) { p.variant.window_left = -5; }, "window_left", "(got -5)");
  expect_problem_error([](auto& p) { p.variant.softcap = -1.0f; }, "softcap", "finite and >= 0");
  expect_problem_error([](auto& p) { p.seq_lens.clear(); }, "seq_lens", "one length per request");
  expect_problem_error([](auto& p) { p.seq_lens[1] = -3; }, "seq_lens", "seq_lens[1] = -3");
  expect_problem_error([](auto& p) { p.seq_lens[2] = 21; }, "seq_lens", "capacity = 20");
  expect_problem_error([](auto& p) { p.scale = -1.0f; }, "scale", "finite and >= 0");
  expect_problem_error([](auto& p) { p.scale = std::nanf(""); }, "scale", "finite");
  expect_problem_error(paged(0, 4, 4), "page_size", ">= 1");
  expect_problem_error(paged(4, 0, 4), "num_pages", ">= 1");
  expect_problem_error(paged(4, 10, 4), "seq_lens", "max_pages x page_size");  // 17 need 5 pages
}

TEST(Validation, PlanOptionRules) {
  const DecodeProblem p = good_problem();
  expect_error([&] { make_plan(p, {0}); }, "workers", "(got 0)");
  expect_error([&] { make_plan(p, {kMaxWorkers + 1}); }, "workers", "must be in [1");
  expect_error([&] { make_plan(p, {2}, {.tile_tokens = -1}); }, "tile", "(got -1)");
  expect_error([&] { make_plan(p, {2}, {.strategy = Strategy::split, .splits = 500}); }, "splits",
               "(got 500)");
  expect_error([&] { make_plan(p, {2}, {.strategy = Strategy::lean, .splits = 2}); }, "splits",
               "split strategy only");
  expect_error([&] { make_plan(p, {2}, {.strategy = Strategy::head, .batch_invariant = true}); },
               "batch_invariant", "lean strategy only");
  expect_error([&] { parse_strategy("fast"); }, "strategy", "lean, split, head");
  expect_error([&] { parse_dtype("f8"); }, "dtype", "f32, f16, bf16");
}

TEST(Validation, TensorRules) {
  DecodeProblem p = good_problem();
  harness::HostCase c = harness::make_case(p, 1);
  DecodeTensors t = c.tensors();
  EXPECT_NO_THROW(validate(c.problem, t));
  auto with = [&](const std::function<void(DecodeTensors&)>& edit, const std::string& argument,
                  const std::string& words) {
    DecodeTensors bad = t;
    edit(bad);
    expect_error([&] { validate(c.problem, bad); }, argument, words);
  };
  with([](auto& x) { x.q = nullptr; }, "q", "must not be null");
  with([](auto& x) { x.k_cache = nullptr; }, "k_cache", "must not be null");
  with([](auto& x) { x.v_cache = nullptr; }, "v_cache", "must not be null");
  with([](auto& x) { x.out = nullptr; }, "out", "must not be null");
  with([](auto& x) { x.q = static_cast<const char*>(x.q) + 1; }, "q", "aligned to 2 bytes");
  with([](auto& x) { x.k_strides.token = -1; }, "k_strides.token", ">= 0");
  with([](auto& x) { x.out_stride_head = -4; }, "out_stride_head", ">= 0");
  with([](auto& x) { x.out_stride_head = 32; }, "out", "overlap");   // rows of 64 overlap
  with([](auto& x) { x.out_stride_batch = 64; }, "out", "overlap");  // batches overlap heads
  DecodeTensors transposed = t;  // [q_heads, batch, head_dim] storage is fine
  transposed.out_stride_batch = 64;
  transposed.out_stride_head = 3 * 64;
  EXPECT_NO_THROW(validate(c.problem, transposed));
}

TEST(Validation, BlockTableEntriesMustBeInRange) {
  DecodeProblem p = good_problem();
  p.layout = KvLayout::paged;
  p.page_size = 4;
  harness::HostCase c = harness::make_case(p, 2);
  EXPECT_NO_THROW(validate(c.problem, c.tensors()));
  c.block_table[static_cast<std::size_t>(2 * c.problem.max_pages + 1)] =
      static_cast<std::int32_t>(c.problem.num_pages);
  expect_error([&] { validate(c.problem, c.tensors()); }, "block_table", "block_table[2][1]");
  c.block_table[static_cast<std::size_t>(2 * c.problem.max_pages + 1)] = -1;
  expect_error([&] { validate(c.problem, c.tensors()); }, "block_table", "[0, num_pages");
  DecodeTensors t = c.tensors();
  t.block_table = nullptr;
  expect_error([&] { validate(c.problem, t); }, "block_table", "must not be null");
}

}  // namespace
}  // namespace leanattn

// Regression (found by plan_fuzzer): a paged case whose num_pages is smaller than the pages its
// requests need shares pages between requests, which is legal and must validate.
namespace leanattn {
namespace {
TEST(Validation, FewerPagesThanNeededAreShared) {
  DecodeProblem p = harness::test_problem({100, 90}, 2, 1, 16);
  p.layout = KvLayout::paged;
  p.page_size = 8;
  p.num_pages = 5;
  harness::HostCase c = harness::make_case(p, 3);
  EXPECT_NO_THROW(validate(c.problem, c.tensors()));
}
}  // namespace
}  // namespace leanattn
