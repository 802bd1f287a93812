// busy_wait() (see busy_wait.hpp).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device/cuda_check.hpp"
#include "cuda_harness/busy_wait.hpp"

namespace leanattn::cuda {

namespace {

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) {
  }
}

}  // namespace

void busy_wait(double microseconds, void* stream) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<std::uint64_t>(microseconds * 1000.0));
  check(cudaGetLastError(), "busy-wait kernel launch");
}

}  // namespace leanattn::cuda
