// Pieces shared by the emulator's host paths (emulated_device.cpp, emulated_capture.cpp): the
// kernel lookup that throws the engine's reason, the context every GPU thread of a launch runs,
// and poisoned host "device" memory. Internal to tools/cuda_emulator (its sources are compiled
// with namespace cuda renamed cuda_emulated).
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "cuda/common/kernel_params.hpp"
#include "cuda/kernel_registry.hpp"
#include "emulator/emulated_device.hpp"
#include "emulator/launch.hpp"
#include "leanattn/error.hpp"

namespace leanattn::emulator {

inline const cuda::KernelHandle& handle_for(const DecodeProblem& problem) {
  const cuda::KernelHandle* k = cuda::find_kernel(problem);
  if (k == nullptr) {
    const std::string why = cuda::why_unsupported(problem);
    const auto colon = why.find(": ");
    throw Error(why.substr(0, colon), why.substr(colon + 2));
  }
  return *k;
}

// What every GPU thread of a launch runs: kernel(params).
template <class Params>
struct KernelCall {
  void (*kernel)(Params);
  Params params;
};

template <class Params>
void run_kernel(const void* context) {
  const auto* call = static_cast<const KernelCall<Params>*>(context);
  call->kernel(call->params);
}

// One launch of the decode kernel `kernel` with `workers` CTAs; throws Error("kernel", ...) when
// a CTA stops (a deadlock, an access outside shared memory).
inline void launch_decode(const cuda::KernelHandle& kernel, std::int32_t workers,
                          const cuda::KernelParams& params, const RunOptions& options) {
  const KernelCall<cuda::KernelParams> call{
      std::bit_cast<void (*)(cuda::KernelParams)>(kernel.kernel), params};
  Launch l;
  l.blocks = workers;
  l.threads = kernel.threads;
  l.smem_bytes = kernel.smem_bytes;
  l.body = run_kernel<cuda::KernelParams>;
  l.context = &call;
  l.seed = options.seed;
  l.resident = options.resident;
  l.early_landing = options.early_landing;
  l.mutations = options.mutations;
  const std::string error = launch(l);
  if (!error.empty()) throw Error("kernel", error);
}

struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{256}); }
};
using Buffer = std::unique_ptr<std::byte[], AlignedFree>;

inline Buffer allocate_poisoned(std::size_t bytes) {
  Buffer b(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{256})));
  std::memset(b.get(), 0xff, bytes);
  return b;
}

}  // namespace leanattn::emulator
