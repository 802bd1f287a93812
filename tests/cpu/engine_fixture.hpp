// The CPU engine suites' fixture, parameterised by SIMD target (GetParam()): engines kept per
// worker count by the same pool `leanattn check` uses (checks::EnginePool), so threads are
// created once per count.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "checks/random_checks.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn {

class SimdEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  cpu::Engine& engine(std::int32_t workers) { return engines_.get(workers); }

 private:
  checks::EnginePool engines_{GetParam()};
};

}  // namespace leanattn
