// The batches the mutation check (scripts/mutation-check.sh) aims at, on the CPU engine with the
// per-row accuracy policy: one 4096-token request among short ones, GQA (4 query heads per KV
// head), paged with a shuffled block table and contiguous, lean and split plans that cut the long
// request into pieces (so partial segments and merges run; the split plan may not); every dtype,
// with and without an empty request. Passes on correct code; each deliberate bug makes it fail
// (docs/validation.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

class Sensitivity : public ::testing::TestWithParam<std::tuple<DType, bool, KvLayout>> {};

TEST_P(Sensitivity, LongRequestAmongShortOnesSplitIntoPieces) {
  const auto [dt, with_empty, layout] = GetParam();
  std::vector<std::int32_t> lens = {4096, 1, 7, 97, 300};
  if (with_empty) lens.insert(lens.begin() + 2, 0);
  DecodeProblem p = harness::test_problem(lens, 8, 2, 128, dt);
  p.layout = layout;
  if (layout == KvLayout::paged) p.page_size = 16;
  harness::HostCase c = harness::make_case(p, 31);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const auto naive = harness::naive_same_precision(c.problem, c.tensors());
  cpu::Engine engine({.workers = 7});
  for (Strategy s : {Strategy::lean, Strategy::split}) {
    const Plan plan = engine.plan(c.problem, {.strategy = s});
    const auto& segs = plan.segments;
    if (s == Strategy::lean) {
      ASSERT_TRUE(std::any_of(segs.begin(), segs.end(), [](const Segment& g) {
        return g.kind == SegmentKind::partial;
      })) << "the lean plan must cut a pair into pieces";
    }
    harness::poison_outputs(c);
    engine.run(c.problem, plan, c.tensors());
    const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
    EXPECT_TRUE(a.ok()) << strategy_name(s) << ": err " << a.max_abs_err << " > tol " << a.tolerance
                        << ", lse err " << a.max_lse_err << " > " << a.lse_tolerance << " ("
                        << a.first_problem << ")";
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<DType, bool, KvLayout>>& info) {
  return std::string(dtype_name(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "_with_empty" : "_no_empty") +
         (std::get<2>(info.param) == KvLayout::paged ? "_paged" : "_contiguous");
}

INSTANTIATE_TEST_SUITE_P(
    Batches, Sensitivity,
    ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16), ::testing::Bool(),
                       ::testing::Values(KvLayout::paged, KvLayout::contiguous)),
    param_name);

}  // namespace
}  // namespace leanattn
