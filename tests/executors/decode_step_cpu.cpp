// The DecodeStep seam tests (decode_step_test.cpp) on the CPU executor, 3 workers.
#include <gtest/gtest.h>

#include "decode_step_cases.hpp"

namespace leanattn::step_tests {

INSTANTIATE_TEST_SUITE_P(Cpu, DecodeStepSeam,
                         ::testing::Values(StepExecutor{
                             "cpu", [] { return make_executor("cpu", {.workers = 3}); }}),
                         step_executor_name);

}  // namespace leanattn::step_tests
