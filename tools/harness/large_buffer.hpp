// Allocation for buffers of many MiB (KV caches in tests and benchmarks, the bandwidth probe):
// 2 MiB-aligned and, on Linux, marked for transparent huge pages before the first touch, so a
// decode pass over a multi-GiB cache does not take a TLB miss every 4 KiB (a benchmark can ask
// for 4 KiB pages instead, to measure what they cost). Smaller buffers are
// 64-byte aligned. Used by the harness (HostCase) and by the read probe, so that the probe and
// the benchmarked cache get the same pages. Internal: not part of the public API.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace leanattn {

// Which pages a buffer of 2 MiB or more gets: `configured` follows set_large_buffer_huge_pages()
// (huge unless a benchmark asked otherwise), `huge` always asks for huge pages (the read probe:
// the machine's best read, whatever the caches get).
enum class LargePages { configured, huge };

// Huge pages (the default) or 4 KiB pages (MADV_NOHUGEPAGE, also where THP is "always") for the
// buffers allocated from now on: `leanattn bench --small-pages` measures a caller's cache that
// was allocated without huge pages. Not thread-safe: set before allocating.
void set_large_buffer_huge_pages(bool huge);

// Returns at least `bytes` bytes (a null pointer for 0); throws std::bad_alloc.
void* allocate_large(std::size_t bytes, LargePages pages = LargePages::configured);
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
