// DeviceBuffer, PinnedBuffer, Event (see device_buffer.hpp).
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

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check(cudaMallocHost(&data_, bytes), "cudaMallocHost (plan staging)");
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) static_cast<void>(cudaFreeHost(data_));
}

Event::Event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  event_ = e;
}

Event::~Event() {
  if (event_ != nullptr) static_cast<void>(cudaEventDestroy(static_cast<cudaEvent_t>(event_)));
}

void Event::record(void* stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream)),
        "cudaEventRecord");
}

void Event::wait() const {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize");
}

}  // namespace leanattn::cuda
