// check() and DeviceGuard (see cuda_check.hpp).
#include "cuda/device/cuda_check.hpp"

#include <string>

#include "leanattn/cuda_engine.hpp"

namespace leanattn::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw CudaError(std::string("leanattn::cuda: ") + what + ": " + cudaGetErrorName(status) + ": " +
                      cudaGetErrorString(status),
                  static_cast<int>(status));
}

DeviceGuard::DeviceGuard(int device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) static_cast<void>(cudaSetDevice(previous_));  // best effort in a destructor
}

}  // namespace leanattn::cuda
