// The executor seam's DecodeStep (leanattn/decode_step.hpp) tested the same way on every
// executor: decode_step_test.cpp holds the tests, each executable instantiates them for the
// executors it links (executors_tests: "cpu"; cuda_emulator_tests: "cuda-emulated", the CUDA
// kernel's and planner's own source).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leanattn/executor.hpp"

namespace leanattn::testing {

struct StepExecutor {
  std::string name;  // a test-name part: letters, digits, underscores
  std::function<std::unique_ptr<Executor>()> make;
  // Length sets replayed on a contiguous cache (at most 20; a paged one gets 2/5 of them, at
  // least 3): the emulator's are slow, and tests/cuda_emulator/device_planner_test.cpp replays
  // the full 20 + 8 there already.
  int replays = 20;
};

inline std::ostream& operator<<(std::ostream& os, const StepExecutor& e) {
  return os << e.name;
}

// The instantiations' test-name generator.
inline std::string step_executor_name(const ::testing::TestParamInfo<StepExecutor>& param) {
  return param.param.name;
}

// The tests' fixture: GetParam().make() makes a fresh executor.
class DecodeStepSeam : public ::testing::TestWithParam<StepExecutor> {};

}  // namespace leanattn::testing
