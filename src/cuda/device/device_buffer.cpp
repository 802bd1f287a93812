// DeviceBuffer (see device_buffer.hpp).
#include "cuda/device/device_buffer.hpp"

#include <cuda_runtime.h>

#include "cuda/device/cuda_check.hpp"

namespace leanattn::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) static_cast<void>(cudaFree(data_));  // never throws from a destructor
}

}  // namespace leanattn::cuda
