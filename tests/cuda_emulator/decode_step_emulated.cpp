// The DecodeStep seam tests (tests/executors/decode_step_test.cpp) on the emulated CUDA engine:
// the device planner kernel and the decode kernel's own source, 7 CTAs, 8 + 3 length sets.
#include <gtest/gtest.h>

#include "decode_step_cases.hpp"
#include "emulator/emulated_executor.hpp"

namespace leanattn::step_tests {

INSTANTIATE_TEST_SUITE_P(Emulated, DecodeStepSeam,
                         ::testing::Values(StepExecutor{
                             "cuda_emulated", [] { return emulator::make_emulated_executor(7); }, 8,
                             false}),
                         step_executor_name);

}  // namespace leanattn::step_tests
