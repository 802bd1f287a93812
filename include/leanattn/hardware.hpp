// Hardware: everything the planner is told about the machine. Only the number of persistent
// workers (CPU threads, or CUDA blocks per SM x SMs); the executors measure it and pass it in.
#pragma once

#include <cstdint>

namespace leanattn {

inline constexpr std::int32_t kMaxWorkers = 1 << 16;

struct Hardware {
  std::int32_t workers = 1;  // persistent workers the plan is made for, 1..kMaxWorkers
};

}  // namespace leanattn
