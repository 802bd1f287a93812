// busy_wait(): a one-thread kernel that spins on the GPU's global timer. The benchmark enqueues
// it before each timed launch, so that the GPU is still busy while the host records the start
// event and issues the launch: the event pair then times the kernel alone, not the host's
// validation and launch overhead (which matters for kernels of a few microseconds).
#pragma once

namespace leanattn::cuda {

// Enqueues a spin of about `microseconds` on `stream` (a cudaStream_t; nullptr = default).
void busy_wait(double microseconds, void* stream);

}  // namespace leanattn::cuda
