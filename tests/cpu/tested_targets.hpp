// The SIMD targets the CPU engine's parameterised suites run on (INSTANTIATE_TEST_SUITE_P with
// tested_simd_targets() and simd_target_name), fewer under the sanitizers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/sanitized.hpp"
#include "leanattn/cpu_engine.hpp"

namespace leanattn {

// The SIMD targets the suites run on: in the release stage every one this CPU supports. Under
// ASan one per vector width, the best first: the best target, AVX2 (32 bytes) and SCALAR; AVX3
// beside a better AVX-512 target (the same 64-byte vectors) and SSE4 (16 bytes, as NEON under
// qemu in the arm64 stage) run in the release stage only. Under TSan the best target alone: the
// engine's threads meet at the same points whatever the target computes with.
inline std::vector<std::string> tested_simd_targets() {
  std::vector<std::string> all = cpu::simd_targets();
  if (!harness::kSanitized || all.empty()) return all;
  std::vector<std::string> kept{all.front()};
  if (harness::kThreadSanitized) return kept;
  for (const char* name : {"AVX2", "SCALAR", "EMU128"}) {
    if (std::find(all.begin(), all.end(), name) != all.end() &&
        std::find(kept.begin(), kept.end(), name) == kept.end()) {
      kept.emplace_back(name);
    }
  }
  return kept;
}

// GoogleTest's name for a suite's instance: the target's name.
inline std::string simd_target_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace leanattn
