// launch(): runs a grid of CTAs on the CPU. Each CTA runs on its own OS thread (its __shared__
// storage is thread_local) and its GPU threads are fibers (fiber.hpp) scheduled in a seeded
// random order (cta.cpp); CTAs start in a seeded random order, at most `resident` at a time, and
// take turns at barriers, fences and atomics, one at a time (grid.cpp), so a run is a function of
// the seed and the last-arriver merge sees many arrival orders across seeds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace leanattn::emulator {

// Deliberate mistakes for the tests that show the emulator catches them: the barrier or the
// cp.async.wait_group at one call site (as listed by call_sites()) does nothing.
struct Mutations {
  std::string drop_barrier;
  std::string drop_wait;
};

struct Launch {
  int blocks = 1;
  int threads = 32;
  int smem_bytes = 0;                 // dynamic shared memory per CTA
  void (*body)(const void* context);  // each GPU thread runs body(context)
  const void* context = nullptr;
  std::uint64_t seed = 1;
  int resident = 4;  // CTAs in flight at once
  // 0: a cp.async copy lands exactly at the wait_group that retires it (the latest the hardware
  // may land it: reads before the wait see poison). p > 0: besides, every time its thread blocks,
  // each pending copy lands with probability p (the hardware may land it any time after issue:
  // a copy that overwrites data other threads still read shows).
  double early_landing = 0.0;
  Mutations mutations;
};

// "" when every CTA ran to its end, else what stopped one (a deadlock, lanes at different warp
// collectives, an access outside shared memory); the other CTAs still run.
std::string launch(const Launch& launch);

// The largest dynamic shared memory a launch may ask for.
inline constexpr int kSharedCapacity = 227 * 1024;

// The __syncthreads and cp.async.wait_group call sites reached so far in this process, as
// "file:line in function" with the file relative to src/ ("cuda/kernel/decode_kernel.cuh:57 in
// attend_range").
struct CallSites {
  std::vector<std::string> barriers;
  std::vector<std::string> waits;
};
CallSites call_sites();
void clear_call_sites();

}  // namespace leanattn::emulator
