// The storage behind the decode kernel's `extern __shared__ unsigned char smem[]` in the host
// build: the shim makes __shared__ thread_local, and each CTA runs on its own OS thread, so this
// array is the CTA's dynamic shared memory. Compiled, like the kernel, with namespace `cuda`
// renamed (CMakeLists.txt), so it defines the kernel's symbol.
#include "emulator/cta.hpp"

namespace leanattn::cuda {

thread_local
    __attribute__((aligned(128))) unsigned char smem[::leanattn::emulator::kSharedCapacity];

}  // namespace leanattn::cuda

namespace leanattn::emulator {

unsigned char* dynamic_shared_base() {
  return ::leanattn::cuda::smem;
}

}  // namespace leanattn::emulator
