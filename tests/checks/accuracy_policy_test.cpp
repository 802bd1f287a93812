// The accuracy policy itself (harness/accuracy.hpp): the fp64 reference rounded once to the
// dtype passes; the failures the old batch-wide policy let through fail now. Each case mixes a
// 4096-token request with short ones and, where named, an empty one (whose LSE is -inf).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

struct PolicyCase {
  harness::HostCase c;
  reference::Output ref;
  harness::NaiveBaseline naive;
};

PolicyCase make_policy_case(DType dt, bool with_empty) {
  std::vector<std::int32_t> lens = {4096, 1, 7, 97};
  if (with_empty) lens.push_back(0);
  PolicyCase pc{harness::make_case(harness::test_problem(lens, 4, 2, 128, dt), 21), {}, {}};
  pc.ref = reference::naive_attention(pc.c.problem, pc.c.tensors());
  pc.naive = harness::naive_same_precision(pc.c.problem, pc.c.tensors());
  return pc;
}

// Writes `value` (a double) into output element i of c, rounded once to the dtype.
void set_out(harness::HostCase& c, std::size_t i, double value) {
  const auto f = static_cast<float>(value);
  switch (c.problem.q_dtype) {
    case DType::f32:
      reinterpret_cast<float*>(c.out.data())[i] = f;
      return;
    case DType::f16:
      reinterpret_cast<std::uint16_t*>(c.out.data())[i] = float_to_f16_bits(f);
      return;
    case DType::bf16:
      reinterpret_cast<std::uint16_t*>(c.out.data())[i] = float_to_bf16_bits(f);
      return;
    default:  // 8-bit types hold K and V only, never the output
      FAIL() << "no output of type " << dtype_name(c.problem.q_dtype);
  }
}

// The reference, rounded once: what an exact executor writes.
void write_reference(PolicyCase& pc) {
  for (std::size_t i = 0; i < pc.ref.out.size(); ++i) set_out(pc.c, i, pc.ref.out[i]);
  for (std::size_t i = 0; i < pc.ref.lse.size(); ++i) {
    pc.c.lse[i] = static_cast<float>(pc.ref.lse[i]);
  }
}

class AccuracyPolicy : public ::testing::TestWithParam<std::tuple<DType, bool>> {
 protected:
  void SetUp() override {
    pc_ = make_policy_case(std::get<0>(GetParam()), std::get<1>(GetParam()));
    write_reference(pc_);
  }
  harness::Accuracy check() { return harness::check_accuracy(pc_.c, pc_.ref, true, &pc_.naive); }
  PolicyCase pc_;
};

TEST_P(AccuracyPolicy, TheRoundedReferencePasses) {
  const harness::Accuracy a = check();
  EXPECT_TRUE(a.ok()) << a.first_problem;
}

TEST_P(AccuracyPolicy, ALongRowOfZerosFails) {
  for (std::size_t i = 0; i < 128; ++i) set_out(pc_.c, i, 0.0);  // request 0 (4096), head 0
  EXPECT_FALSE(check().ok());
}

TEST_P(AccuracyPolicy, AnLseOffByOneTileFails) {
  pc_.c.lse[0] += static_cast<float>(std::log(3968.0 / 4096.0));  // 4096 tokens, 128 fewer
  EXPECT_FALSE(check().ok());
}

TEST_P(AccuracyPolicy, NonFiniteValuesAreComparedByKind) {
  pc_.c.lse[1] = std::numeric_limits<float>::infinity();  // finite reference
  EXPECT_FALSE(check().ok());
  write_reference(pc_);
  set_out(pc_.c, 5, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(check().ok());
  if (std::get<1>(GetParam())) {  // the empty request: -inf LSE must stay -inf
    write_reference(pc_);
    pc_.c.lse.back() = 0.0f;
    EXPECT_FALSE(check().ok());
    write_reference(pc_);
    pc_.c.lse.back() = std::numeric_limits<float>::infinity();
    EXPECT_FALSE(check().ok());
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<DType, bool>>& info) {
  return std::string(dtype_name(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "_with_empty" : "_no_empty");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AccuracyPolicy,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
}  // namespace leanattn
