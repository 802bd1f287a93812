// Allocation for buffers of many MiB (KV caches in tests and benchmarks, the bandwidth probe):
// 2 MiB-aligned and, on Linux, marked for transparent huge pages before the first touch, so a
// decode pass over a multi-GiB cache does not take a TLB miss every 4 KiB. Smaller buffers are
// 64-byte aligned. Used by the harness (HostCase) and by the read probe, so that the probe and
// the benchmarked cache get the same pages. Internal: not part of the public API.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace leanattn {

// Returns at least `bytes` bytes (a null pointer for 0); throws std::bad_alloc.
void* allocate_large(std::size_t bytes);
void free_large(void* p) noexcept;

template <class T>
struct LargeBufferAllocator {
  using value_type = T;
  LargeBufferAllocator() = default;
  template <class U>
  explicit LargeBufferAllocator(const LargeBufferAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_large(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { free_large(p); }
  friend bool operator==(const LargeBufferAllocator&, const LargeBufferAllocator&) = default;
};

// Bytes of a tensor in host memory.
using ByteBuffer = std::vector<std::byte, LargeBufferAllocator<std::byte>>;

}  // namespace leanattn
