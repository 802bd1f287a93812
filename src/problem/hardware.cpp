// default_workers(), validate_workers() and resolve_workers() (see leanattn/hardware.hpp).
#include "leanattn/hardware.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "leanattn/error.hpp"

namespace leanattn {

std::int32_t default_workers() {
  return static_cast<std::int32_t>(
      std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), kMaxWorkers));
}

void validate_workers(std::int32_t workers, const char* zero_means) {
  const std::int32_t lowest = zero_means != nullptr ? 0 : 1;
  require(workers >= lowest && workers <= kMaxWorkers, "workers", [&] {
    return "must be in [" + std::to_string(lowest) + ", " + std::to_string(kMaxWorkers) + "]" +
           (zero_means != nullptr ? std::string(" (0 = ") + zero_means + ")" : std::string()) +
           " (got " + std::to_string(workers) + ")";
  });
}

std::int32_t resolve_workers(std::int32_t requested) {
  validate_workers(requested, "one per core");
  return requested > 0 ? requested : default_workers();
}

}  // namespace leanattn
