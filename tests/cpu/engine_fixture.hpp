// The CPU engine suites' fixture, parameterised by SIMD target (GetParam()): "cpu" executors kept
// per worker count in the library's ExecutorCache (as `leanattn check` keeps them), so threads
// are created once per count.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "checks/random_checks.hpp"
#include "cpu/tested_targets.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/executor_cache.hpp"

namespace leanattn {

class SimdEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The CPU engine with `workers` threads on this target; valid until kKeptExecutors other
  // worker counts have been asked for.
  Executor& engine(std::int32_t workers) {
    return executors_.get("cpu", {.workers = workers, .simd = GetParam()})->executor();
  }

 private:
  ExecutorCache executors_{checks::kKeptExecutors};
};

}  // namespace leanattn
