// Checking of CUDA runtime calls for the host adapter: every call and every launch goes through
// check(), which throws leanattn::cuda::CudaError naming the call, with the CUDA error's name and
// text. Also a guard that makes the engine's device current for the duration of a call.
#pragma once

#include <cuda_runtime.h>

namespace leanattn::cuda {

// Throws CudaError("leanattn::cuda: <what>: <cudaErrorName>: <text>") unless status is success.
void check(cudaError_t status, const char* what);

// Makes `device` current and restores the previous device on destruction.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

}  // namespace leanattn::cuda
