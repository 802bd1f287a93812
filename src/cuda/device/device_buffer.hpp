// DeviceBuffer: an owned cudaMalloc allocation (moved, never copied). Used by the engine (its
// workspace, the uploaded plans) and by the GPU test and benchmark harness. PinnedBuffer: an owned
// cudaMallocHost allocation (the plan cache's staging for asynchronous uploads). Event: an owned
// cudaEvent_t without timing (void* here: no CUDA types in this header).
#pragma once

#include <cstddef>
#include <utility>

namespace leanattn::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);  // throws CudaError; 0 bytes allocates nothing
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);  // throws CudaError; 0 bytes allocates nothing
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class Event {
 public:
  Event();  // throws CudaError
  ~Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(void* stream);  // cudaEventRecord
  void wait() const;          // cudaEventSynchronize (the host waits)
  void* get() const { return event_; }

 private:
  void* event_ = nullptr;  // cudaEvent_t
};

}  // namespace leanattn::cuda
