// What the CUDA shim (cuda_shim.hpp) and the emulated PTX (shim/cuda/collective/ptx.cuh) ask of
// the emulator: the calling GPU thread's indices, CTA barriers, warp collectives (every lane of the
// mask deposits its operands; when the last one arrives the collective is computed for all of
// them), the points where other CTAs may run (fences, atomics), the CTA's shared-memory window
// and its asynchronous copies. Implemented by cta.cpp for the thread that is running now.
#pragma once

#include <cstdint>
#include <source_location>

namespace leanattn::emulator {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

const Dim3& thread_idx();
const Dim3& block_idx();
const Dim3& block_dim();
const Dim3& grid_dim();
int lane_id();

// __syncthreads(): waits until every live thread of the CTA has arrived. `where` names the call
// site (mutations may drop the barrier of one site).
void sync_threads(std::source_location where);

// A warp collective: each lane of `mask` passes its operands (`self`); when all have arrived,
// compute(lanes, mask) runs once with the 32 lanes' operands (null outside the mask), then every
// lane continues. All lanes must name the same `op` (a string literal), else the run aborts.
using CollectiveFn = void (*)(void* const* lanes, unsigned mask);
void warp_collective(unsigned mask, const char* op, void* self, CollectiveFn compute);

// A fence, an atomic, a sleep: the point where other CTAs may run before this thread goes on.
void global_point();

// The CTA's shared memory as 32-bit shared-state-space addresses (cvta.to.shared), and back; the
// access [address, address + bytes) must lie inside the launch's dynamic shared memory or a static
// __shared__ variable, else the run aborts.
std::uint32_t shared_address(const void* p);
unsigned char* shared_pointer(std::uint32_t address, int bytes);

// cp.async: a copy of `size` bytes (16, or 4 for the scales; src_bytes = size) or a zero fill
// (src_bytes = 0) queued in this thread's current
// group; it lands in shared memory only at the cp.async.wait_group that retires its group.
void cp_async(std::uint32_t dst, const void* src, int size, int src_bytes);
void cp_async_commit();
void cp_async_wait(int pending, std::source_location where);

}  // namespace leanattn::emulator
