// The device read-bandwidth probe `leanattn bench --backend cuda` compares against: a kernel that
// reads (and sums) a buffer far larger than L2 with 16-byte loads, timed with CUDA events. Decode
// reads K and V once, so this read-only figure is its limit. Same result type as the CPU probe
// (tools/bench_runner/read_probe.hpp); `threads` holds the CTAs launched.
#pragma once

#include <cstdint>

#include "bench_runner/read_probe.hpp"

namespace leanattn::cuda {

// Allocates `bytes` on the current device, fills it, then times `passes` full reads (after one
// warm-up pass). Throws CudaError on a CUDA failure.
cpu::ProbeResult measure_device_read_bandwidth(std::int64_t bytes, std::int32_t passes);

}  // namespace leanattn::cuda
