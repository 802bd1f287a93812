// allocate_large / free_large (see large_buffer.hpp).
#include "harness/large_buffer.hpp"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace leanattn {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

void* allocate_large(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t align = bytes >= kHugePage ? kHugePage : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where transparent huge pages are off, the buffer keeps 4 KiB pages.
  if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

void free_large(void* p) noexcept {
  std::free(p);
}

}  // namespace leanattn
