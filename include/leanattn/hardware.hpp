// Hardware: everything the planner is told about the machine. Only the number of persistent
// workers (CPU threads, or CUDA blocks per SM x SMs); the executors measure it and pass it in.
#pragma once

#include <cstdint>

namespace leanattn {

inline constexpr std::int32_t kMaxWorkers = 1 << 16;

struct Hardware {
  std::int32_t workers = 1;  // persistent workers the plan is made for, 1..kMaxWorkers
};

// The CPU's default worker count: one per available core (at least 1). Every "0 = one per core"
// of the library, the CLI and the Python module means this.
std::int32_t default_workers();

// The one rule of a worker count (plans, engines, the CLI, Python): throws Error("workers")
// unless 1 <= workers <= kMaxWorkers, or workers is 0 where `zero_means` says what 0 asks for
// ("one per core", "occupancy"; nullptr: 0 is refused).
void validate_workers(std::int32_t workers, const char* zero_means = nullptr);

// validate_workers(requested, "one per core"), then requested, or default_workers() for 0.
std::int32_t resolve_workers(std::int32_t requested);

}  // namespace leanattn
