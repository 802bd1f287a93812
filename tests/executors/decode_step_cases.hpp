// The executor seam's DecodeStep (leanattn/decode_step.hpp) tested the same way on every
// executor: decode_step_test.cpp holds the tests, each executable instantiates them for the
// executors it links (executors_tests: "cpu"; cuda_emulator_tests: "cuda-emulated", the CUDA
// kernel's and planner's own source).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "leanattn/error.hpp"
#include "leanattn/executor.hpp"

namespace leanattn::step_tests {

struct StepExecutor {
  std::string name;  // a test-name part: letters, digits, underscores
  std::function<std::unique_ptr<Executor>()> make;
  // Length sets replayed on a contiguous cache (at most 20; a paged one gets 2/5 of them, at
  // least 3): the emulator's are slow, and tests/cuda_emulator/device_planner_test.cpp replays
  // the full 20 + 8 there already.
  int replays = 20;
  // Whether its steps take a mixed shape (query_start_loc; mixed_decode_step_test.cpp): the
  // CPU engine's do, the CUDA engine's (and the emulator's) refuse one by name.
  bool mixed_steps = true;
};

inline std::ostream& operator<<(std::ostream& os, const StepExecutor& e) {
  return os << e.name;
}

// Replay `i`'s lengths for 5 requests of at most 200 tokens: growing (0-3), then shrinking
// (4-5), every request empty (6), one long request (7), then random with zeros from `rng`.
inline std::vector<std::int32_t> replay_lengths(int i, std::mt19937_64& rng) {
  std::vector<std::int32_t> lens(5);
  if (i < 4) {
    for (int b = 0; b < 5; ++b) lens[b] = std::min(200, 11 * (i + 1) * (b + 1));
  } else if (i < 6) {
    for (int b = 0; b < 5; ++b) lens[b] = std::max(0, 190 - 70 * (i - 4) - 7 * b);
  } else if (i == 6) {
    lens.assign(5, 0);
  } else if (i == 7) {
    lens = {0, 200, 0, 1, 0};
  } else {
    for (std::int32_t& x : lens) x = rng() % 5 == 0 ? 0 : static_cast<std::int32_t>(rng() % 201);
  }
  return lens;
}

// The instantiations' test-name generator.
inline std::string step_executor_name(const ::testing::TestParamInfo<StepExecutor>& param) {
  return param.param.name;
}

// The tests' fixture: GetParam().make() makes a fresh executor.
class DecodeStepSeam : public ::testing::TestWithParam<StepExecutor> {};

// The error's message when `f` throws Error, "" when it does not.
template <class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace leanattn::step_tests
